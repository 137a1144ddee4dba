// Tests of the ConcatV2 kernel: hand values, a reference loop along each axis (negative axes too)
// for every dtype, large inputs with few and with many rows (the two threaded paths), empty
// inputs, zero-copy when one input holds every element, and the errors.
#include <gtest/gtest.h>

#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::AllTypes;
using testing::CopyElement;
using testing::IndexScalar;
using testing::IndexVector;
using testing::IsNodeError;
using testing::RandomTensor;
using testing::Ravel;
using testing::RunKernelOnly;
using testing::Unravel;
using weft::testing::KernelRunner;

Tensor ReferenceConcat(const std::vector<Tensor>& values, int axis) {
  std::vector<int64_t> dims = values[0].shape().dim_sizes();
  dims[axis] = 0;
  for (const Tensor& v : values) dims[axis] += v.dim_size(axis);
  Tensor out(values[0].dtype(), TensorShape(dims));
  int64_t start = 0;
  for (const Tensor& v : values) {
    for (int64_t i = 0; i < v.NumElements(); ++i) {
      std::vector<int64_t> index = Unravel(i, v.shape());
      index[axis] += start;
      CopyElement(v, i, out, Ravel(index, out.shape()));
    }
    start += v.dim_size(axis);
  }
  return out;
}

void ExpectMatchesReference(KernelRunner& runner, const std::vector<Tensor>& values, int axis,
                            int64_t axis_arg, DataType axis_type) {
  std::vector<Tensor> inputs = values;
  inputs.push_back(IndexScalar(axis_type, axis_arg));
  StatusOr<Tensor> y = runner.RunOne("ConcatV2", inputs);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, ReferenceConcat(values, axis)) << "axis " << axis_arg;
}

TEST(ConcatOpTest, HandValues) {
  KernelRunner runner;
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  Tensor b = Tensor::FromVector<float>({5, 6}, TensorShape({1, 2}));
  StatusOr<Tensor> y = runner.RunOne("ConcatV2", {a, b, IndexScalar(DataType::kInt32, 0)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})));
  Tensor c = Tensor::FromVector<float>({7, 8}, TensorShape({2, 1}));
  y = runner.RunOne("ConcatV2", {a, c, a, IndexScalar(DataType::kInt64, -1)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y,
                   Tensor::FromVector<float>({1, 2, 7, 1, 2, 3, 4, 8, 3, 4}, TensorShape({2, 5})));
}

TEST(ConcatOpTest, EveryAxisMatchesTheReference) {
  KernelRunner runner;
  std::mt19937 rng(12);
  const std::vector<int64_t> base = {3, 4, 5};
  for (DataType dtype : AllTypes()) {
    for (int axis = 0; axis < 3; ++axis) {
      for (int n = 2; n <= 4; ++n) {
        std::vector<Tensor> values;
        for (int i = 0; i < n; ++i) {
          std::vector<int64_t> dims = base;
          dims[axis] = static_cast<int64_t>(rng() % 4);  // 0 to 3, empty inputs included
          values.push_back(RandomTensor(dtype, TensorShape(dims), rng));
        }
        ExpectMatchesReference(runner, values, axis, axis, DataType::kInt32);
        ExpectMatchesReference(runner, values, axis, axis - 3, DataType::kInt64);
      }
    }
  }
}

TEST(ConcatOpTest, RankOneAndLargeInputs) {
  KernelRunner runner(4);
  std::mt19937 rng(13);
  ExpectMatchesReference(runner,
                         {RandomTensor(DataType::kInt32, TensorShape({5}), rng),
                          RandomTensor(DataType::kInt32, TensorShape({2}), rng)},
                         0, 0, DataType::kInt32);
  // Few long rows: the copies are cut into pieces.
  ExpectMatchesReference(runner,
                         {RandomTensor(DataType::kFloat, TensorShape({2, 70000}), rng),
                          RandomTensor(DataType::kFloat, TensorShape({2, 50001}), rng)},
                         1, 1, DataType::kInt32);
  ExpectMatchesReference(runner,
                         {RandomTensor(DataType::kDouble, TensorShape({90000}), rng),
                          RandomTensor(DataType::kDouble, TensorShape({3}), rng)},
                         0, 0, DataType::kInt32);
  // Many rows: rows are spread over the threads.
  ExpectMatchesReference(runner,
                         {RandomTensor(DataType::kUInt8, TensorShape({1000, 30}), rng),
                          RandomTensor(DataType::kUInt8, TensorShape({1000, 17}), rng),
                          RandomTensor(DataType::kUInt8, TensorShape({1000, 1}), rng)},
                         1, -1, DataType::kInt64);
}

TEST(ConcatOpTest, OneInputHoldingEverythingIsPassedOn) {
  KernelRunner runner;
  Tensor a = Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Tensor empty(DataType::kInt64, TensorShape({0, 3}));
  StatusOr<Tensor> y = runner.RunOne("ConcatV2", {empty, a, IndexScalar(DataType::kInt32, 0)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, a);
  EXPECT_TRUE(y->SharesBufferWith(a));
}

TEST(ConcatOpTest, Errors) {
  KernelRunner runner;
  Tensor a(DataType::kFloat, TensorShape({2, 3}));
  Tensor b(DataType::kFloat, TensorShape({2, 4}));
  Tensor c(DataType::kFloat, TensorShape({2, 3, 1}));
  Tensor axis0 = IndexScalar(DataType::kInt32, 0);
  const std::vector<std::pair<std::vector<Tensor>, std::string>> cases = {
      {{a, b, axis0}, "[2,4]"},
      {{a, c, axis0}, "[2,3,1]"},
      {{a, a, IndexScalar(DataType::kInt32, 2)}, "axis 2 is out of range"},
      {{a, a, IndexScalar(DataType::kInt64, -3)}, "axis -3 is out of range"},
      {{Tensor::Scalar<float>(1), Tensor::Scalar<float>(2), axis0}, "scalars"}};
  for (const auto& [inputs, fragment] : cases) {
    EXPECT_TRUE(IsNodeError(runner.RunOne("ConcatV2", inputs).status(), "test_ConcatV2", fragment));
    EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "ConcatV2", inputs).status(),
                            "test_ConcatV2", fragment));
  }
  EXPECT_TRUE(IsNodeError(
      RunKernelOnly(runner.device(), "ConcatV2", {a, a, IndexVector(DataType::kInt32, {0})})
          .status(),
      "test_ConcatV2", "axis must be a scalar"));
  // N must be at least 2.
  EXPECT_FALSE(runner.RunOne("ConcatV2", {a, axis0}).ok());
}

}  // namespace
}  // namespace weft::kernels::array
