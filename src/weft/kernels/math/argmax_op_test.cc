// Tests for the ArgMax kernel: hand values, ties and NaN, negative dimension, output_type, a
// reference loop over shapes and axes (small and thread pool sized), and the error paths.
#include <limits>

#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomTensor;
using weft::testing::KernelRunner;

TEST(ArgMaxOpTest, HandValues) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<float>({1, 9, 3, 7, 5, 6}, TensorShape({2, 3}));
  StatusOr<Tensor> rows = runner.RunOne("ArgMax", {x, Tensor::Scalar<int32_t>(1)});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TENSOR_EQ(*rows, Tensor::FromVector<int64_t>({1, 0}));
  StatusOr<Tensor> cols = runner.RunOne("ArgMax", {x, Tensor::Scalar<int64_t>(-2)},
                                        {{"output_type", MakeAttrValue(DataType::kInt32)}});
  ASSERT_TRUE(cols.ok()) << cols.status();
  EXPECT_TENSOR_EQ(*cols, Tensor::FromVector<int32_t>({1, 0, 1}));
}

TEST(ArgMaxOpTest, TiesGoToTheFirstIndexAndNanWins) {
  KernelRunner runner;
  StatusOr<Tensor> ties = runner.RunOne(
      "ArgMax", {Tensor::FromVector<int32_t>({2, 5, 5, 1}), Tensor::Scalar<int32_t>(0)});
  ASSERT_TRUE(ties.ok()) << ties.status();
  EXPECT_TENSOR_EQ(*ties, Tensor::Scalar<int64_t>(1));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  StatusOr<Tensor> with_nan = runner.RunOne(
      "ArgMax", {Tensor::FromVector<double>({2, nan, 9, nan}), Tensor::Scalar<int32_t>(0)});
  ASSERT_TRUE(with_nan.ok()) << with_nan.status();
  EXPECT_TENSOR_EQ(*with_nan, Tensor::Scalar<int64_t>(1));
}

template <typename T>
void CheckAgainstReference(KernelRunner& runner, const TensorShape& shape, uint32_t seed) {
  Tensor x = RandomTensor<T>(shape, seed, 0, 50);
  for (int axis = 0; axis < shape.dims(); ++axis) {
    int64_t a = 1, b = 1;
    const int64_t r = shape.dim_size(axis);
    if (r == 0) continue;  // an error, tested below
    for (int i = 0; i < axis; ++i) a *= shape.dim_size(i);
    for (int i = axis + 1; i < shape.dims(); ++i) b *= shape.dim_size(i);
    TensorShape out_shape = shape;
    out_shape.RemoveDim(axis);
    Tensor expected(DataType::kInt64, out_shape);
    for (int64_t ai = 0; ai < a; ++ai) {
      for (int64_t bi = 0; bi < b; ++bi) {
        int64_t best = 0;
        for (int64_t ri = 1; ri < r; ++ri) {
          if (x.data<T>()[(ai * r + ri) * b + bi] > x.data<T>()[(ai * r + best) * b + bi])
            best = ri;
        }
        expected.data<int64_t>()[ai * b + bi] = best;
      }
    }
    StatusOr<Tensor> y = runner.RunOne("ArgMax", {x, Tensor::Scalar<int32_t>(axis)});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TENSOR_EQ(*y, expected) << shape << " axis " << axis;
  }
}

TEST(ArgMaxOpTest, MatchesReferenceLoop) {
  KernelRunner runner;
  uint32_t seed = 1;
  for (const TensorShape& shape : {TensorShape({7}), TensorShape({3, 4}), TensorShape({2, 3, 5}),
                                   TensorShape({4, 1, 3, 2}), TensorShape({0, 3})}) {
    CheckAgainstReference<float>(runner, shape, seed++);
    CheckAgainstReference<int32_t>(runner, shape, seed++);
  }
  CheckAgainstReference<double>(runner, TensorShape({3, 4}), seed++);
  CheckAgainstReference<int64_t>(runner, TensorShape({3, 4}), seed++);
  CheckAgainstReference<uint8_t>(runner, TensorShape({3, 4}), seed++);
  // Thread pool sized: sharded over rows, and over columns when there is one row.
  CheckAgainstReference<float>(runner, TensorShape({200, 200}), seed++);
  CheckAgainstReference<float>(runner, TensorShape({1, 50, 1000}), seed++);
}

TEST(ArgMaxOpTest, RejectsBadDimensionsNamingTheNode) {
  KernelRunner runner;
  Tensor x = RandomTensor<float>(TensorShape({2, 3}), 1);
  StatusOr<Tensor> y = runner.RunOne("ArgMax", {x, Tensor::Scalar<int32_t>(2)});
  ASSERT_FALSE(y.ok());
  EXPECT_TRUE(IsInvalidArgument(y.status()));
  EXPECT_NE(y.status().message().find("node 'test_ArgMax' (ArgMax)"), std::string::npos);
  StatusOr<std::vector<Tensor>> k = testing::RunKernelOnly(
      "ArgMax", {x, Tensor::Scalar<int32_t>(-3)}, {{"T", MakeAttrValue(DataType::kFloat)}});
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message(),
            "node 'k' (ArgMax): dimension -3 is out of range for input of rank 2 (shape [2,3])");
  StatusOr<Tensor> empty = runner.RunOne(
      "ArgMax", {Tensor(DataType::kFloat, TensorShape({2, 0})), Tensor::Scalar<int32_t>(1)});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(),
            "node 'test_ArgMax' (ArgMax): reduction axis 1 is empty in shape [2,0]");
  EXPECT_FALSE(
      runner.RunOne("ArgMax", {Tensor::Scalar<float>(1), Tensor::Scalar<int32_t>(0)}).ok());
  EXPECT_FALSE(runner.RunOne("ArgMax", {x, Tensor::FromVector<int32_t>({0})}).ok());
  EXPECT_FALSE(
      runner.RunOne("ArgMax", {Tensor::FromVector<bool>({true}), Tensor::Scalar<int32_t>(0)}).ok());
}

}  // namespace
}  // namespace weft::kernels
