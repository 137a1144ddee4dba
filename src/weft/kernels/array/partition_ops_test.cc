// Tests of the DynamicPartition, DynamicStitch and Range kernels: hand values with rows of several
// elements and an empty partition, partition-then-stitch restoring its input for every array
// dtype, and every error naming the position and value at fault.
#include <random>

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::AllTypes;
using testing::RandomTensor;
using weft::testing::KernelRunner;

const Tensor kPartitions = Tensor::FromVector<int32_t>({2, 0, 2, 2, 0});

TEST(DynamicPartitionTest, SplitsRowsInOrderAndLeavesAnEmptyPartitionEmpty) {
  KernelRunner runner;
  Tensor data =
      Tensor::FromVector<float>({0, 1, 10, 11, 20, 21, 30, 31, 40, 41}, TensorShape({5, 2}));
  StatusOr<std::vector<Tensor>> parts = runner.Run("DynamicPartition", {data, kPartitions},
                                                   {{"num_partitions", MakeAttrValue(int64_t{3})}});
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_TENSOR_NEAR((*parts)[0], Tensor::FromVector<float>({10, 11, 40, 41}, TensorShape({2, 2})));
  EXPECT_EQ((*parts)[1].shape(), TensorShape({0, 2}));
  EXPECT_TENSOR_NEAR((*parts)[2],
                     Tensor::FromVector<float>({0, 1, 20, 21, 30, 31}, TensorShape({3, 2})));
}

TEST(DynamicPartitionTest, ThenStitchGivesBackTheInputForEveryDtype) {
  for (DataType dtype : AllTypes()) {
    KernelRunner runner;
    std::mt19937 rng(9);
    Tensor data = RandomTensor(dtype, TensorShape({5, 3}), rng);
    StatusOr<std::vector<Tensor>> parts = runner.Run(
        "DynamicPartition", {data, kPartitions}, {{"num_partitions", MakeAttrValue(int64_t{3})}});
    ASSERT_TRUE(parts.ok()) << parts.status();
    StatusOr<std::vector<Tensor>> where =
        runner.Run("DynamicPartition", {Tensor::FromVector<int32_t>({0, 1, 2, 3, 4}), kPartitions},
                   {{"num_partitions", MakeAttrValue(int64_t{3})}});
    ASSERT_TRUE(where.ok()) << where.status();
    std::vector<Tensor> inputs = *where;
    inputs.insert(inputs.end(), parts->begin(), parts->end());
    StatusOr<Tensor> merged =
        runner.RunOne("DynamicStitch", inputs, {{"N", MakeAttrValue(int64_t{3})}});
    ASSERT_TRUE(merged.ok()) << merged.status();
    EXPECT_TENSOR_NEAR(*merged, data) << DataTypeName(dtype);
  }
}

TEST(DynamicStitchTest, LaterPairsWinAndRowsNoIndexNamesAreZero) {
  KernelRunner runner;
  StatusOr<Tensor> merged =
      runner.RunOne("DynamicStitch",
                    {Tensor::FromVector<int32_t>({0, 3}), Tensor::FromVector<int32_t>({3}),
                     Tensor::FromVector<double>({1, 2}), Tensor::FromVector<double>({9})},
                    {{"N", MakeAttrValue(int64_t{2})}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_TENSOR_NEAR(*merged, Tensor::FromVector<double>({1, 0, 0, 9}));
}

TEST(DynamicPartitionTest, BadPartitionsAreNamed) {
  KernelRunner runner;
  Tensor data = Tensor::FromVector<float>({1, 2, 3});
  StatusOr<std::vector<Tensor>> parts =
      runner.Run("DynamicPartition", {data, Tensor::FromVector<int32_t>({0, 3, 1})},
                 {{"num_partitions", MakeAttrValue(int64_t{2})}});
  ASSERT_FALSE(parts.ok());
  EXPECT_NE(parts.status().message().find("partitions[1] = 3 is not in [0, 2)"), std::string::npos)
      << parts.status();
  parts = runner.Run("DynamicPartition", {data, Tensor::FromVector<int32_t>({0, 1})},
                     {{"num_partitions", MakeAttrValue(int64_t{2})}});
  ASSERT_FALSE(parts.ok());
  EXPECT_NE(parts.status().message().find("partitions' and data's dims must be equal"),
            std::string::npos)
      << parts.status();
}

TEST(DynamicStitchTest, BadIndicesAndShapesAreNamed) {
  KernelRunner runner;
  StatusOr<Tensor> merged = runner.RunOne(
      "DynamicStitch", {Tensor::FromVector<int32_t>({0, -2}), Tensor::FromVector<double>({1, 2})});
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find("indices 0[1] = -2 is negative"), std::string::npos)
      << merged.status();
  merged = runner.RunOne("DynamicStitch", {Tensor::FromVector<int32_t>({0, 1}),
                                           Tensor::FromVector<double>({1, 2, 3})});
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find("data 0 of shape [3]"), std::string::npos)
      << merged.status();
}

TEST(RangeTest, CountsUpAndDownAndRefusesWhatCannotEnd) {
  KernelRunner runner;
  StatusOr<Tensor> up = runner.RunOne(
      "Range",
      {Tensor::Scalar<int64_t>(2), Tensor::Scalar<int64_t>(9), Tensor::Scalar<int64_t>(3)});
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_TENSOR_NEAR(*up, Tensor::FromVector<int64_t>({2, 5, 8}));
  StatusOr<Tensor> down = runner.RunOne(
      "Range",
      {Tensor::Scalar<int32_t>(3), Tensor::Scalar<int32_t>(0), Tensor::Scalar<int32_t>(-1)});
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_TENSOR_NEAR(*down, Tensor::FromVector<int32_t>({3, 2, 1}));
  StatusOr<Tensor> none = runner.RunOne(
      "Range",
      {Tensor::Scalar<int32_t>(4), Tensor::Scalar<int32_t>(4), Tensor::Scalar<int32_t>(1)});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->NumElements(), 0);
  EXPECT_FALSE(runner
                   .RunOne("Range", {Tensor::Scalar<int32_t>(0), Tensor::Scalar<int32_t>(4),
                                     Tensor::Scalar<int32_t>(0)})
                   .ok());
  EXPECT_FALSE(runner
                   .RunOne("Range", {Tensor::Scalar<int32_t>(5), Tensor::Scalar<int32_t>(4),
                                     Tensor::Scalar<int32_t>(1)})
                   .ok());
}

}  // namespace
}  // namespace weft::kernels::array
