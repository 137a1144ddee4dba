// DlrmModel: a small DLRM (W7's shape with small tables) trained with Fit on the synthetic
// Criteo-shaped data learns something (held-out log loss below the base rate's), its logit has
// one column per example, and bad options are named.
#include "weft/train/dlrm_model.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/data/synthetic_criteo.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

TEST(DlrmModelTest, LearnsTheHiddenModelOfSmallTables) {
  data::SyntheticCriteoOptions data;
  data.table_rows = {500, 200, 50, 20};
  DlrmOptions options;
  options.table_rows = data.table_rows;
  options.top_units = {32, 16};
  auto model = DlrmModel::Create(options);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(
      (*model)->Compile(NewAdagradOptimizer(0.05), BinaryCrossentropy(/*from_logits=*/true)).ok());
  auto history = (*model)->Fit(data::SyntheticCriteoDataset(data, 0, 60'000, 256), {.epochs = 2});
  ASSERT_TRUE(history.ok()) << history.status();
  const data::Dataset held_out = data::SyntheticCriteoDataset(data, int64_t{1} << 40, 8192, 1024);
  auto logs = (*model)->Evaluate(held_out);
  ASSERT_TRUE(logs.ok()) << logs.status();
  auto all = data::GenerateSyntheticCriteo(data, int64_t{1} << 40, 8192);
  ASSERT_TRUE(all.ok()) << all.status();
  double positives = 0;
  for (int64_t i = 0; i < 8192; ++i) positives += (*all)[2].data<float>()[i];
  const double p = positives / 8192;
  const double base = -(p * std::log(p) + (1 - p) * std::log(1 - p));
  EXPECT_LT(logs->at("loss"), 0.95 * base) << "base rate " << p;
  auto predicted = (*model)->Predict(data::SyntheticCriteoDataset(data, 0, 100, 64));
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->shape(), TensorShape({100, 1}));
}

TEST(DlrmModelTest, BadOptionsAreNamed) {
  DlrmOptions options;
  EXPECT_THAT(DlrmModel::Create(options).status().message(), HasSubstr("table_rows is empty"));
  options.table_rows = {10, 0};
  EXPECT_THAT(DlrmModel::Create(options).status().message(), HasSubstr("table 1 has 0 rows"));
  options.table_rows = {10};
  options.bottom_units = {64, 8};
  EXPECT_THAT(DlrmModel::Create(options).status().message(),
              HasSubstr("must end with embedding_dim (16)"));
}

}  // namespace
}  // namespace weft::train
