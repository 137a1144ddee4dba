#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/data/dataset.h"
#include "weft/dataset.pb.h"
#include "weft/framework/attr_value_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using ::testing::HasSubstr;
using weft::testing::KernelRunner;

using Attrs = std::map<std::string, proto::AttrValue>;

// The pipeline ids 0..n-1 (int64) with ids * 0.5 (float), in batches of `batch`.
data::Dataset Pairs(int64_t n, int64_t batch) {
  std::vector<int64_t> ids(n);
  std::vector<float> halves(n);
  for (int64_t i = 0; i < n; ++i) {
    ids[i] = i;
    halves[i] = 0.5f * static_cast<float>(i);
  }
  return data::Dataset::FromTensors({Tensor::FromVector(ids), Tensor::FromVector(halves)})
      .Batch(batch);
}

Attrs MakeAttrs(const data::Dataset& dataset, const std::string& name) {
  return {{"dataset", MakeAttrValue(dataset.ToDef().value().SerializeAsString())},
          {"shared_name", MakeAttrValue(name)}};
}

Attrs GetNextAttrs(const std::string& name, std::vector<DataType> types) {
  return {{"shared_name", MakeAttrValue(name)}, {"output_types", MakeAttrValue(types)}};
}

const std::vector<DataType> kPairTypes = {DataType::kInt64, DataType::kFloat};

TEST(IteratorOpsTest, GetNextWalksThePipelineAndThenSaysOutOfRange) {
  KernelRunner runner;
  ASSERT_TRUE(runner.Run("MakeIterator", {}, MakeAttrs(Pairs(5, 2), "d")).ok());
  const Attrs next = GetNextAttrs("d", kPairTypes);
  auto first = runner.Run("IteratorGetNext", {}, next);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TENSOR_EQ((*first)[0], Tensor::FromVector<int64_t>({0, 1}));
  EXPECT_TENSOR_EQ((*first)[1], Tensor::FromVector<float>({0, 0.5f}));
  EXPECT_TENSOR_EQ(runner.Run("IteratorGetNext", {}, next).value()[0],
                   Tensor::FromVector<int64_t>({2, 3}));
  EXPECT_TENSOR_EQ(runner.Run("IteratorGetNext", {}, next).value()[0],
                   Tensor::FromVector<int64_t>({4}));
  Status end = runner.Run("IteratorGetNext", {}, next).status();
  EXPECT_EQ(end.code(), Code::kOutOfRange);
  EXPECT_THAT(end.message(), HasSubstr("dataset 'd' has no element after its 3"));
}

TEST(IteratorOpsTest, MakeIteratorAgainStartsOverAndNamesAreKeptApart) {
  KernelRunner runner;
  ASSERT_TRUE(runner.Run("MakeIterator", {}, MakeAttrs(Pairs(6, 3), "a")).ok());
  ASSERT_TRUE(runner.Run("MakeIterator", {}, MakeAttrs(Pairs(6, 2), "b")).ok());
  const Attrs a = GetNextAttrs("a", kPairTypes);
  const Attrs b = GetNextAttrs("b", kPairTypes);
  EXPECT_TENSOR_EQ(runner.Run("IteratorGetNext", {}, a).value()[0],
                   Tensor::FromVector<int64_t>({0, 1, 2}));
  EXPECT_TENSOR_EQ(runner.Run("IteratorGetNext", {}, a).value()[0],
                   Tensor::FromVector<int64_t>({3, 4, 5}));
  EXPECT_TENSOR_EQ(runner.Run("IteratorGetNext", {}, b).value()[0],
                   Tensor::FromVector<int64_t>({0, 1}));
  ASSERT_TRUE(runner.Run("MakeIterator", {}, MakeAttrs(Pairs(6, 3), "a")).ok());
  EXPECT_TENSOR_EQ(runner.Run("IteratorGetNext", {}, a).value()[0],
                   Tensor::FromVector<int64_t>({0, 1, 2}));
  EXPECT_TENSOR_EQ(runner.Run("IteratorGetNext", {}, b).value()[0],
                   Tensor::FromVector<int64_t>({2, 3}));
}

TEST(IteratorOpsTest, GetNextWithoutAnIteratorSaysWhichDatasetIsMissing) {
  KernelRunner runner;
  Status missing = runner.Run("IteratorGetNext", {}, GetNextAttrs("lost", kPairTypes)).status();
  EXPECT_EQ(missing.code(), Code::kFailedPrecondition);
  EXPECT_THAT(missing.message(), HasSubstr("dataset 'lost' has no iterator on this device"));
}

TEST(IteratorOpsTest, DeclaredTypesThatDoNotMatchAreRefusedNamingTheComponent) {
  KernelRunner runner;
  ASSERT_TRUE(runner.Run("MakeIterator", {}, MakeAttrs(Pairs(4, 2), "d")).ok());
  Status wrong =
      runner.Run("IteratorGetNext", {}, GetNextAttrs("d", {DataType::kInt64, DataType::kInt32}))
          .status();
  EXPECT_EQ(wrong.code(), Code::kInvalidArgument);
  EXPECT_THAT(wrong.message(), HasSubstr("component 1 of element 0 of dataset 'd' is float32"));
  Status count = runner.Run("IteratorGetNext", {}, GetNextAttrs("d", {DataType::kInt64})).status();
  EXPECT_THAT(count.message(), HasSubstr("has 2 components, but 1 output types are declared"));
}

TEST(IteratorOpsTest, ABadDatasetIsAnErrorOfItsNodeNotACrash) {
  KernelRunner runner;
  Attrs garbage = {{"dataset", MakeAttrValue(std::string("\xff\xff\xff not a proto"))},
                   {"shared_name", MakeAttrValue("g")}};
  Status parse = runner.Run("MakeIterator", {}, garbage).status();
  EXPECT_EQ(parse.code(), Code::kInvalidArgument);
  EXPECT_THAT(parse.message(), HasSubstr("not a serialized DatasetDef"));

  proto::DatasetDef absent;
  absent.mutable_csv_file()->set_path("/nonexistent/weft/rows.csv");
  absent.mutable_csv_file()->add_column_types(proto::DT_FLOAT);
  absent.mutable_csv_file()->set_delimiter(",");
  Status missing = runner
                       .Run("MakeIterator", {},
                            {{"dataset", MakeAttrValue(absent.SerializeAsString())},
                             {"shared_name", MakeAttrValue("csv")}})
                       .status();
  EXPECT_EQ(missing.code(), Code::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("dataset 'csv'"));
  EXPECT_THAT(missing.message(), HasSubstr("/nonexistent/weft/rows.csv"));
}

}  // namespace
}  // namespace weft::kernels
