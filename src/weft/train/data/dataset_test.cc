#include "weft/train/data/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace weft::train {
namespace {

using ::testing::HasSubstr;

IdxArray Array(std::vector<int64_t> dims, std::vector<uint8_t> data) {
  return IdxArray{std::move(dims), std::move(data)};
}

TEST(DatasetTest, ScalesPixelsToUnitRangeAndWidensLabels) {
  IdxArray images = Array({2, 2, 3}, {0, 51, 102, 153, 204, 255, 255, 0, 1, 2, 3, 4});
  IdxArray labels = Array({2}, {7, 255});
  StatusOr<Dataset> dataset = MakeDataset(images, labels);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(dataset->NumExamples(), 2);
  EXPECT_EQ(dataset->height, 2);
  EXPECT_EQ(dataset->width, 3);
  EXPECT_EQ(dataset->ExampleSize(), 6);
  ASSERT_EQ(dataset->images.dtype(), DataType::kFloat);
  EXPECT_EQ(dataset->images.shape(), TensorShape({2, 6}));
  const float* pixels = dataset->images.data<float>();
  EXPECT_EQ(pixels[0], 0.0f);
  EXPECT_FLOAT_EQ(pixels[1], 0.2f);
  EXPECT_FLOAT_EQ(pixels[2], 0.4f);
  EXPECT_EQ(pixels[5], 1.0f);
  EXPECT_EQ(pixels[6], 1.0f);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(pixels[i], images.data[i] / 255.0f) << i;
  ASSERT_EQ(dataset->labels.dtype(), DataType::kInt64);
  EXPECT_EQ(dataset->labels.shape(), TensorShape({2}));
  EXPECT_EQ(dataset->labels.data<int64_t>()[0], 7);
  EXPECT_EQ(dataset->labels.data<int64_t>()[1], 255);
}

TEST(DatasetTest, EmptyDatasetIsFine) {
  StatusOr<Dataset> dataset = MakeDataset(Array({0, 28, 28}, {}), Array({0}, {}));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(dataset->NumExamples(), 0);
  EXPECT_EQ(dataset->images.shape(), TensorShape({0, 784}));
  EXPECT_EQ(Dataset().NumExamples(), 0);
}

TEST(DatasetTest, CountMismatchNamesBothCounts) {
  StatusOr<Dataset> dataset =
      MakeDataset(Array({3, 1, 2}, std::vector<uint8_t>(6)), Array({2}, {0, 1}));
  EXPECT_TRUE(IsInvalidArgument(dataset.status())) << dataset.status();
  EXPECT_THAT(dataset.status().message(), HasSubstr("3 images"));
  EXPECT_THAT(dataset.status().message(), HasSubstr("2 labels"));
}

TEST(DatasetTest, RejectsWrongRanks) {
  StatusOr<Dataset> flat = MakeDataset(Array({2, 4}, std::vector<uint8_t>(8)), Array({2}, {0, 1}));
  EXPECT_TRUE(IsInvalidArgument(flat.status()));
  EXPECT_THAT(flat.status().message(), HasSubstr("images must be rank 3"));
  EXPECT_THAT(flat.status().message(), HasSubstr("[2,4]"));
  StatusOr<Dataset> labels = MakeDataset(Array({2, 1, 1}, {0, 1}), Array({2, 1}, {0, 1}));
  EXPECT_TRUE(IsInvalidArgument(labels.status()));
  EXPECT_THAT(labels.status().message(), HasSubstr("labels must be rank 1"));
}

TEST(DatasetTest, RejectsDataThatDoesNotMatchDims) {
  StatusOr<Dataset> short_data = MakeDataset(Array({2, 2, 2}, {1, 2, 3}), Array({2}, {0, 1}));
  EXPECT_TRUE(IsInvalidArgument(short_data.status()));
  EXPECT_THAT(short_data.status().message(), HasSubstr("does not match"));
  StatusOr<Dataset> negative = MakeDataset(Array({-1, -1, 0}, {}), Array({-1}, {}));
  EXPECT_TRUE(IsInvalidArgument(negative.status()));
  EXPECT_THAT(negative.status().message(), HasSubstr("negative"));
}

TEST(DatasetTest, ChecksLabelsAgainstTheClassCount) {
  IdxArray images = Array({3, 1, 1}, {0, 0, 0});
  IdxArray labels = Array({3}, {0, 9, 10});
  StatusOr<Dataset> dataset = MakeDataset(images, labels, 10);
  EXPECT_TRUE(IsInvalidArgument(dataset.status()));
  EXPECT_THAT(dataset.status().message(), HasSubstr("label 10 of example 2"));
  EXPECT_THAT(dataset.status().message(), HasSubstr("[0, 10)"));
  EXPECT_TRUE(MakeDataset(images, labels, 11).ok());
  EXPECT_TRUE(MakeDataset(images, labels).ok());  // no class count: any byte is a label
}

}  // namespace
}  // namespace weft::train
