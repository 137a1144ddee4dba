// Tests for the Div, Maximum and Minimum kernels: hand values (integer truncation, NaN
// propagation), a broadcasting reference loop, and integer division by zero.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomTensor;
using testing::ReferenceBinary;
using weft::testing::KernelRunner;

TEST(CwiseDivMaxOpsTest, IntegerDivisionTruncatesTowardZero) {
  KernelRunner runner;
  StatusOr<Tensor> z = runner.RunOne("Div", {Tensor::FromVector<int32_t>({7, -7, 7, -7, 0}),
                                             Tensor::FromVector<int32_t>({2, 2, -2, -2, 5})});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TENSOR_EQ(*z, Tensor::FromVector<int32_t>({3, -3, -3, 3, 0}));
}

TEST(CwiseDivMaxOpsTest, LowestDividedByMinusOneWraps) {
  KernelRunner runner;
  constexpr int64_t kLowest = std::numeric_limits<int64_t>::lowest();
  StatusOr<Tensor> z = runner.RunOne(
      "Div", {Tensor::FromVector<int64_t>({kLowest, 6}), Tensor::Scalar<int64_t>(-1)});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TENSOR_EQ(*z, Tensor::FromVector<int64_t>({kLowest, -6}));
}

TEST(CwiseDivMaxOpsTest, IntegerDivisionByZeroIsAnErrorNamingTheNode) {
  KernelRunner runner;
  for (DataType type : {DataType::kInt32, DataType::kInt64}) {
    Tensor x = type == DataType::kInt32 ? Tensor::FromVector<int32_t>({1, 2, 3})
                                        : Tensor::FromVector<int64_t>({1, 2, 3});
    Tensor y = type == DataType::kInt32 ? Tensor::FromVector<int32_t>({1, 0, 3})
                                        : Tensor::FromVector<int64_t>({1, 0, 3});
    StatusOr<Tensor> z = runner.RunOne("Div", {x, y});
    ASSERT_FALSE(z.ok());
    EXPECT_TRUE(IsInvalidArgument(z.status()));
    EXPECT_EQ(z.status().message(), "node 'test_Div' (Div): integer division by zero");
  }
  // Broadcast scalar zero divisor.
  StatusOr<Tensor> s =
      runner.RunOne("Div", {Tensor::FromVector<int32_t>({1, 2}), Tensor::Scalar<int32_t>(0)});
  EXPECT_FALSE(s.ok());
}

TEST(CwiseDivMaxOpsTest, FloatDivisionByZeroFollowsIeee) {
  KernelRunner runner;
  StatusOr<Tensor> z = runner.RunOne(
      "Div", {Tensor::FromVector<float>({1, -1, 6}), Tensor::FromVector<float>({0, 0, 3})});
  ASSERT_TRUE(z.ok()) << z.status();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TENSOR_EQ(*z, Tensor::FromVector<float>({inf, -inf, 2}));
}

TEST(CwiseDivMaxOpsTest, MaximumByHandPropagatesNan) {
  KernelRunner runner;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  StatusOr<Tensor> z = runner.RunOne("Maximum", {Tensor::FromVector<double>({1, 5, nan, 2}),
                                                 Tensor::FromVector<double>({3, 4, 1, nan})});
  ASSERT_TRUE(z.ok()) << z.status();
  const double* v = z->data<double>();
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], 5);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_TRUE(std::isnan(v[3]));
  StatusOr<Tensor> i = runner.RunOne(
      "Maximum", {Tensor::FromVector<int32_t>({-1, 4, 0}), Tensor::Scalar<int32_t>(1)});
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_TENSOR_EQ(*i, Tensor::FromVector<int32_t>({1, 4, 1}));
}

TEST(CwiseDivMaxOpsTest, MinimumByHandPropagatesNan) {
  KernelRunner runner;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  StatusOr<Tensor> z = runner.RunOne("Minimum", {Tensor::FromVector<float>({1, 5, nan, 2}),
                                                 Tensor::FromVector<float>({3, 4, 1, nan})});
  ASSERT_TRUE(z.ok()) << z.status();
  const float* v = z->data<float>();
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 4);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_TRUE(std::isnan(v[3]));
  StatusOr<Tensor> i = runner.RunOne(
      "Minimum", {Tensor::FromVector<int64_t>({-1, 4, 1}), Tensor::Scalar<int64_t>(1)});
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_TENSOR_EQ(*i, Tensor::FromVector<int64_t>({-1, 1, 1}));
}

template <typename T>
void CheckAgainstReference(KernelRunner& runner, const TensorShape& xs, const TensorShape& ys,
                           uint32_t seed) {
  Tensor x = RandomTensor<T>(xs, seed, 1, 20);
  Tensor y = RandomTensor<T>(ys, seed + 1, 1, 20);  // nonzero divisors
  for (bool swap : {false, true}) {
    const Tensor& l = swap ? y : x;
    const Tensor& r = swap ? x : y;
    StatusOr<Tensor> q = runner.RunOne("Div", {l, r});
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_TENSOR_EQ(*q, (ReferenceBinary<T, T>(l, r, [](T a, T b) -> T { return a / b; })))
        << l.shape() << " / " << r.shape();
    StatusOr<Tensor> m = runner.RunOne("Maximum", {l, r});
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TENSOR_EQ(*m, (ReferenceBinary<T, T>(l, r, [](T a, T b) -> T { return a > b ? a : b; })))
        << "max " << l.shape() << " " << r.shape();
    StatusOr<Tensor> n = runner.RunOne("Minimum", {l, r});
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_TENSOR_EQ(*n, (ReferenceBinary<T, T>(l, r, [](T a, T b) -> T { return a < b ? a : b; })))
        << "min " << l.shape() << " " << r.shape();
  }
}

TEST(CwiseDivMaxOpsTest, MatchesReferenceLoop) {
  KernelRunner runner;
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {TensorShape({2, 3}), TensorShape({3})},      {TensorShape({4, 1, 3}), TensorShape({5, 1})},
      {TensorShape({}), TensorShape({2, 3})},       {TensorShape({3, 17}), TensorShape({3, 17})},
      {TensorShape({5, 32}), TensorShape({1, 32})}, {TensorShape({0}), TensorShape({1})},
      {TensorShape({64, 600}), TensorShape({600})},
  };
  uint32_t seed = 100;
  for (const auto& [xs, ys] : shapes) {
    CheckAgainstReference<float>(runner, xs, ys, seed++);
    CheckAgainstReference<double>(runner, xs, ys, seed++);
    CheckAgainstReference<int32_t>(runner, xs, ys, seed++);
    CheckAgainstReference<int64_t>(runner, xs, ys, seed++);
  }
}

}  // namespace
}  // namespace weft::kernels
