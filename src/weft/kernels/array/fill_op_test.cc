// Tests of the Fill, ZerosLike and OnesLike kernels, small (inline) and large (threaded).
#include <gtest/gtest.h>

#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::AllTypes;
using testing::IndexScalar;
using testing::IndexVector;
using testing::IsNodeError;
using testing::RandomTensor;
using testing::RunKernelOnly;
using weft::testing::KernelRunner;

// A tensor of `shape` with every element `value` (the reference).
template <typename T>
Tensor Filled(const TensorShape& shape, T value) {
  Tensor t(DataTypeToEnum<T>::value, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<T>()[i] = value;
  return t;
}

TEST(FillOpTest, HandValues) {
  KernelRunner runner;
  StatusOr<Tensor> y =
      runner.RunOne("Fill", {IndexVector(DataType::kInt32, {2, 3}), Tensor::Scalar<float>(7.5f)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y,
                   Tensor::FromVector<float>({7.5, 7.5, 7.5, 7.5, 7.5, 7.5}, TensorShape({2, 3})));
  y = runner.RunOne("Fill", {IndexVector(DataType::kInt64, {}), Tensor::Scalar<int64_t>(-3)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::Scalar<int64_t>(-3));
  y = runner.RunOne("Fill", {IndexVector(DataType::kInt32, {0, 4}), Tensor::Scalar<bool>(true)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({0, 4}));
}

TEST(FillOpTest, EveryDtypeSmallAndLarge) {
  KernelRunner runner;
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{5}, {300, 200}}) {
    TensorShape shape(dims);
    auto check = [&]<typename T>(T value) {
      StatusOr<Tensor> y =
          runner.RunOne("Fill", {IndexVector(DataType::kInt64, dims), Tensor::Scalar<T>(value)});
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_TENSOR_EQ(*y, Filled<T>(shape, value));
    };
    check(1.25f);
    check(-2.5);
    check(int32_t{-7});
    check(int64_t{1} << 40);
    check(uint8_t{200});
    check(true);
  }
}

TEST(FillOpTest, Errors) {
  KernelRunner runner;
  Tensor dims = IndexVector(DataType::kInt32, {2, 2});
  Tensor vector_value = Tensor::FromVector<float>({1, 2});
  EXPECT_TRUE(
      IsNodeError(runner.RunOne("Fill", {dims, vector_value}).status(), "test_Fill", "rank 0"));
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "Fill", {dims, vector_value}).status(),
                          "test_Fill", "must be a scalar"));
  Tensor negative = IndexVector(DataType::kInt32, {2, -1});
  Tensor one = Tensor::Scalar<float>(1);
  EXPECT_TRUE(IsNodeError(runner.RunOne("Fill", {negative, one}).status(), "test_Fill", "[2,-1]"));
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "Fill", {negative, one}).status(),
                          "test_Fill", "[2,-1]"));
  EXPECT_TRUE(IsNodeError(
      RunKernelOnly(runner.device(), "Fill", {IndexScalar(DataType::kInt32, 2), one}).status(),
      "test_Fill", "must be a vector"));
}

TEST(ZerosLikeOpTest, EveryDtypeAndShape) {
  KernelRunner runner;
  std::mt19937 rng(6);
  for (DataType dtype : AllTypes()) {
    for (const TensorShape& shape :
         {TensorShape(), TensorShape({0, 3}), TensorShape({4, 5}), TensorShape({200, 300})}) {
      Tensor x = RandomTensor(dtype, shape, rng);
      Tensor before = x.DeepCopy();
      StatusOr<Tensor> zeros = runner.RunOne("ZerosLike", {x});
      StatusOr<Tensor> ones = runner.RunOne("OnesLike", {x});
      ASSERT_TRUE(zeros.ok() && ones.ok()) << zeros.status() << ones.status();
      VisitNumericType(dtype, [&]<typename T>() {
        EXPECT_TENSOR_EQ(*zeros, Filled<T>(shape, T(0)));
        EXPECT_TENSOR_EQ(*ones, Filled<T>(shape, T(1)));
      });
      EXPECT_TENSOR_EQ(x, before);  // a shared input is never overwritten
    }
  }
}

TEST(ZerosLikeOpTest, ReusesTheInputBufferWhenSoleOwner) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<float>({1, 2, 3});
  const void* data = x.raw_data();
  std::vector<Tensor> inputs;  // not an initializer list: that would keep a second reference
  inputs.push_back(std::move(x));
  StatusOr<Tensor> y = runner.RunOne("OnesLike", std::move(inputs));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->raw_data(), data);
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<float>({1, 1, 1}));
}

}  // namespace
}  // namespace weft::kernels::array
