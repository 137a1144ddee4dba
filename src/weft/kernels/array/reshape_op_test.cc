// Tests of the Reshape, ExpandDims and Squeeze kernels: values, zero-copy, and every error path
// both through shape inference (constant inputs) and in the kernel itself.
#include <gtest/gtest.h>

#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::AllTypes;
using testing::DirectKernel;
using testing::IndexScalar;
using testing::IndexVector;
using testing::IsNodeError;
using testing::RandomTensor;
using testing::RunKernelOnly;
using weft::testing::KernelRunner;

TEST(ReshapeOpTest, HandValuesAndInferredDimension) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  StatusOr<Tensor> y = runner.RunOne("Reshape", {x, IndexVector(DataType::kInt32, {3, -1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})));
  EXPECT_TRUE(y->SharesBufferWith(x));

  y = runner.RunOne("Reshape", {x, IndexVector(DataType::kInt64, {-1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({6}));
  EXPECT_TRUE(y->SharesBufferWith(x));

  Tensor one = Tensor::FromVector<int32_t>({7}, TensorShape({1, 1}));
  y = runner.RunOne("Reshape", {one, IndexVector(DataType::kInt32, {})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::Scalar<int32_t>(7));

  Tensor empty(DataType::kBool, TensorShape({0, 3}));
  y = runner.RunOne("Reshape", {empty, IndexVector(DataType::kInt32, {3, -1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({3, 0}));
}

TEST(ReshapeOpTest, RandomShapesKeepTheElementOrder) {
  KernelRunner runner;
  std::mt19937 rng(4);
  const std::vector<std::pair<TensorShape, std::vector<int64_t>>> cases = {
      {TensorShape({2, 3, 4}), {4, -1}},
      {TensorShape({24}), {2, 2, 2, 3}},
      {TensorShape({5, 1}), {1, 5, 1}},
      {TensorShape({3, 4}), {-1, 2, 3}}};
  for (DataType dtype : AllTypes()) {
    for (const auto& [shape, target] : cases) {
      Tensor x = RandomTensor(dtype, shape, rng);
      StatusOr<Tensor> y = runner.RunOne("Reshape", {x, IndexVector(DataType::kInt64, target)});
      ASSERT_TRUE(y.ok()) << y.status();
      ASSERT_EQ(y->NumElements(), x.NumElements());
      EXPECT_TENSOR_EQ(y->Reshaped(x.shape()), x);  // same elements in the same order
      EXPECT_TRUE(y->SharesBufferWith(x));
    }
  }
}

TEST(ReshapeOpTest, ErrorsNameTheNodeAndBothShapes) {
  KernelRunner runner;
  Tensor x(DataType::kFloat, TensorShape({2, 3}));
  const std::vector<std::pair<std::vector<int64_t>, std::string>> cases = {
      {{4, 2}, "[2,3]"}, {{4, -1}, "[4,-1]"}, {{-1, -1}, "-1"}, {{2, -3}, "negative"}};
  for (const auto& [target, fragment] : cases) {
    Tensor shape = IndexVector(DataType::kInt32, target);
    // Shape inference sees the constant shape first; the kernel checks it again on its own.
    EXPECT_TRUE(
        IsNodeError(runner.RunOne("Reshape", {x, shape}).status(), "test_Reshape", fragment));
    EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "Reshape", {x, shape}).status(),
                            "test_Reshape", fragment));
  }
  Status s = RunKernelOnly(runner.device(), "Reshape", {x, IndexVector(DataType::kInt32, {4, 2})})
                 .status();
  EXPECT_TRUE(IsNodeError(s, "test_Reshape", "[2,3]")) << s;
  EXPECT_TRUE(IsNodeError(s, "test_Reshape", "[4,2]")) << s;
  EXPECT_TRUE(IsNodeError(
      RunKernelOnly(runner.device(), "Reshape", {x, IndexScalar(DataType::kInt32, 6)}).status(),
      "test_Reshape", "must be a vector"));
  EXPECT_TRUE(IsNodeError(runner.RunOne("Reshape", {x, IndexScalar(DataType::kInt32, 6)}).status(),
                          "test_Reshape", "rank 1"));
}

TEST(ExpandDimsOpTest, InsertsASizeOneDimension) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  const std::vector<std::pair<int64_t, TensorShape>> cases = {{0, TensorShape({1, 2, 3})},
                                                              {1, TensorShape({2, 1, 3})},
                                                              {2, TensorShape({2, 3, 1})},
                                                              {-1, TensorShape({2, 3, 1})},
                                                              {-3, TensorShape({1, 2, 3})}};
  for (const auto& [dim, expected] : cases) {
    for (DataType index_type : {DataType::kInt32, DataType::kInt64}) {
      StatusOr<Tensor> y = runner.RunOne("ExpandDims", {x, IndexScalar(index_type, dim)});
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_TENSOR_EQ(*y, x.Reshaped(expected));
      EXPECT_TRUE(y->SharesBufferWith(x));
    }
  }
  StatusOr<Tensor> y =
      runner.RunOne("ExpandDims", {Tensor::Scalar<bool>(true), IndexVector(DataType::kInt32, {0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<bool>({true}));
}

TEST(ExpandDimsOpTest, Errors) {
  KernelRunner runner;
  Tensor x(DataType::kFloat, TensorShape({2, 3}));
  for (int64_t dim : {3, -4}) {
    Tensor d = IndexScalar(DataType::kInt32, dim);
    EXPECT_TRUE(IsNodeError(runner.RunOne("ExpandDims", {x, d}).status(), "test_ExpandDims",
                            "out of range"));
    EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "ExpandDims", {x, d}).status(),
                            "test_ExpandDims", "out of range"));
  }
  Tensor two = IndexVector(DataType::kInt32, {0, 1});
  EXPECT_TRUE(
      IsNodeError(runner.RunOne("ExpandDims", {x, two}).status(), "test_ExpandDims", "one value"));
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "ExpandDims", {x, two}).status(),
                          "test_ExpandDims", "one value"));
}

TEST(SqueezeOpTest, RemovesSizeOneDimensions) {
  KernelRunner runner;
  std::mt19937 rng(5);
  Tensor x = RandomTensor(DataType::kUInt8, TensorShape({1, 2, 1, 3}), rng);
  const std::vector<std::pair<std::vector<int64_t>, TensorShape>> cases = {
      {{}, TensorShape({2, 3})},
      {{0}, TensorShape({2, 1, 3})},
      {{-2}, TensorShape({1, 2, 3})},
      {{0, 2}, TensorShape({2, 3})}};
  for (const auto& [dims, expected] : cases) {
    StatusOr<Tensor> y = runner.RunOne("Squeeze", {x}, {{"squeeze_dims", MakeAttrValue(dims)}});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TENSOR_EQ(*y, x.Reshaped(expected));
    EXPECT_TRUE(y->SharesBufferWith(x));
  }
  StatusOr<Tensor> scalar = runner.RunOne("Squeeze", {Tensor::FromVector<float>({2.5f})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_TENSOR_EQ(*scalar, Tensor::Scalar<float>(2.5f));
}

TEST(SqueezeOpTest, Errors) {
  KernelRunner runner;
  Tensor x(DataType::kFloat, TensorShape({1, 2}));
  const std::vector<std::pair<std::vector<int64_t>, std::string>> cases = {
      {{1}, "its size is not 1"}, {{2}, "out of range"}, {{-3}, "out of range"}};
  for (const auto& [dims, fragment] : cases) {
    std::map<std::string, proto::AttrValue> attrs = {{"squeeze_dims", MakeAttrValue(dims)}};
    EXPECT_TRUE(
        IsNodeError(runner.RunOne("Squeeze", {x}, attrs).status(), "test_Squeeze", fragment));
    EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "Squeeze", {x}, attrs).status(),
                            "test_Squeeze", fragment));
  }
}

TEST(ReshapeOpTest, KernelsAreCheap) {
  KernelRunner runner;
  for (const char* op : {"Reshape", "ExpandDims"}) {
    auto kernel = DirectKernel::Create(runner.device(), op, {DataType::kFloat, DataType::kInt32});
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_TRUE((*kernel)->kernel().IsCheap()) << op;
  }
  auto squeeze = DirectKernel::Create(runner.device(), "Squeeze", {DataType::kFloat});
  ASSERT_TRUE(squeeze.ok()) << squeeze.status();
  EXPECT_TRUE((*squeeze)->kernel().IsCheap());
}

}  // namespace
}  // namespace weft::kernels::array
