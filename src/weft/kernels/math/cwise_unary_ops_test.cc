// Tests for the unary kernels (Neg, Square, Abs, Sign, Sqrt, Rsqrt, Exp, Log, Log1p, Reciprocal,
// Erf): hand values, a reference loop on several shapes (rank 0, empty, thread pool sized), buffer
// reuse, unregistered dtypes.
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomTensor;
using weft::testing::KernelRunner;

TEST(CwiseUnaryOpsTest, HandValues) {
  KernelRunner runner;
  auto run = [&](const std::string& op, Tensor x) {
    StatusOr<Tensor> y = runner.RunOne(op, {std::move(x)});
    EXPECT_TRUE(y.ok()) << op << ": " << y.status();
    return y.ok() ? *y : Tensor();
  };
  EXPECT_TENSOR_EQ(run("Neg", Tensor::FromVector<int32_t>({1, -2, 0})),
                   Tensor::FromVector<int32_t>({-1, 2, 0}));
  EXPECT_TENSOR_EQ(run("Square", Tensor::FromVector<int64_t>({3, -4})),
                   Tensor::FromVector<int64_t>({9, 16}));
  EXPECT_TENSOR_EQ(run("Sqrt", Tensor::FromVector<float>({4, 9, 0})),
                   Tensor::FromVector<float>({2, 3, 0}));
  EXPECT_TENSOR_NEAR(run("Exp", Tensor::FromVector<double>({0, 1})),
                     Tensor::FromVector<double>({1, 2.718281828459045}), 1e-12, 1e-12);
  EXPECT_TENSOR_NEAR(run("Log", Tensor::FromVector<float>({1, 2.718281828f})),
                     Tensor::FromVector<float>({0, 1}), 1e-6, 1e-6);
  EXPECT_TENSOR_EQ(run("Reciprocal", Tensor::FromVector<double>({2, -4, 0.5})),
                   Tensor::FromVector<double>({0.5, -0.25, 2}));
  EXPECT_TENSOR_EQ(run("Neg", Tensor::Scalar<float>(1.5f)), Tensor::Scalar<float>(-1.5f));
  EXPECT_TENSOR_EQ(run("Abs", Tensor::FromVector<int32_t>({-3, 0, 4})),
                   Tensor::FromVector<int32_t>({3, 0, 4}));
  EXPECT_TENSOR_EQ(run("Abs", Tensor::FromVector<double>({-2.5, 0, 1})),
                   Tensor::FromVector<double>({2.5, 0, 1}));
  EXPECT_TENSOR_EQ(run("Sign", Tensor::FromVector<float>({-2.5f, 0, 3})),
                   Tensor::FromVector<float>({-1, 0, 1}));
  EXPECT_TENSOR_EQ(run("Sign", Tensor::FromVector<int64_t>({-7, 0, 9})),
                   Tensor::FromVector<int64_t>({-1, 0, 1}));
  EXPECT_TENSOR_NEAR(run("Rsqrt", Tensor::FromVector<float>({4, 0.25f, 1})),
                     Tensor::FromVector<float>({0.5f, 2, 1}), 1e-6, 1e-6);
  // log1p keeps the digits that log(1 + x) rounds away near 0.
  EXPECT_TENSOR_NEAR(run("Log1p", Tensor::FromVector<double>({0, 1e-12, 1.718281828459045})),
                     Tensor::FromVector<double>({0, 9.999999999995e-13, 1}), 0, 1e-12);
}

template <typename T, typename Fn>
void CheckUnary(KernelRunner& runner, const std::string& op, Fn fn, double lo, double hi,
                double tolerance) {
  uint32_t seed = 300;
  for (const TensorShape& shape : {TensorShape({}), TensorShape({0}), TensorShape({3, 5}),
                                   TensorShape({2, 3, 7}), TensorShape({200, 180})}) {
    Tensor x = RandomTensor<T>(shape, seed++, lo, hi);
    Tensor expected(x.dtype(), x.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      expected.data<T>()[i] = fn(x.data<T>()[i]);
    }
    StatusOr<Tensor> y = runner.RunOne(op, {x});
    ASSERT_TRUE(y.ok()) << op << ": " << y.status();
    if constexpr (std::is_floating_point_v<T>) {
      EXPECT_TENSOR_NEAR(*y, expected, tolerance, tolerance) << op << " " << shape;
    } else {
      EXPECT_TENSOR_EQ(*y, expected) << op << " " << shape;
    }
  }
}

TEST(CwiseUnaryOpsTest, MatchesReferenceLoop) {
  KernelRunner runner;
  CheckUnary<float>(
      runner, "Neg", [](float v) { return -v; }, -10, 10, 0);
  CheckUnary<int64_t>(
      runner, "Neg", [](int64_t v) { return -v; }, -10, 10, 0);
  CheckUnary<double>(
      runner, "Square", [](double v) { return v * v; }, -10, 10, 0);
  CheckUnary<int32_t>(
      runner, "Square", [](int32_t v) { return v * v; }, -100, 100, 0);
  CheckUnary<float>(
      runner, "Sqrt", [](float v) { return std::sqrt(v); }, 0, 100, 1e-6);
  CheckUnary<double>(
      runner, "Sqrt", [](double v) { return std::sqrt(v); }, 0, 100, 1e-14);
  CheckUnary<float>(
      runner, "Exp", [](float v) { return std::exp(v); }, -10, 10, 1e-6);
  CheckUnary<double>(
      runner, "Exp", [](double v) { return std::exp(v); }, -10, 10, 1e-14);
  CheckUnary<float>(
      runner, "Log", [](float v) { return std::log(v); }, 1e-3, 100, 1e-6);
  CheckUnary<double>(
      runner, "Log", [](double v) { return std::log(v); }, 1e-3, 100, 1e-14);
  CheckUnary<float>(
      runner, "Reciprocal", [](float v) { return 1 / v; }, 0.5, 10, 1e-6);
  CheckUnary<double>(
      runner, "Reciprocal", [](double v) { return 1 / v; }, 0.5, 10, 1e-14);
  CheckUnary<float>(
      runner, "Abs", [](float v) { return std::abs(v); }, -10, 10, 0);
  CheckUnary<int32_t>(
      runner, "Abs", [](int32_t v) { return v < 0 ? -v : v; }, -100, 100, 0);
  CheckUnary<double>(
      runner, "Sign", [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }, -10, 10, 0);
  CheckUnary<int64_t>(
      runner, "Sign", [](int64_t v) { return int64_t{v > 0} - int64_t{v < 0}; }, -3, 3, 0);
  CheckUnary<float>(
      runner, "Rsqrt", [](float v) { return 1 / std::sqrt(v); }, 0.01, 100, 1e-5);
  CheckUnary<double>(
      runner, "Rsqrt", [](double v) { return 1 / std::sqrt(v); }, 0.01, 100, 1e-14);
  CheckUnary<float>(
      runner, "Log1p", [](float v) { return std::log1p(v); }, -0.99, 100, 1e-6);
  CheckUnary<double>(
      runner, "Log1p", [](double v) { return std::log1p(v); }, -0.99, 100, 1e-14);
  // Beyond |x| = 6 erf is +-1 in both types; the range covers the saturated tails.
  CheckUnary<float>(
      runner, "Erf", [](float v) { return std::erf(v); }, -7, 7, 1e-6);
  CheckUnary<double>(
      runner, "Erf", [](double v) { return std::erf(v); }, -7, 7, 1e-15);
}

// erf is odd, erf(0.5) and erf(1.5) to double precision, +-1 far out (no NaN for huge or infinite
// inputs in float, whose erf clamps its argument).
TEST(CwiseUnaryOpsTest, ErfHandValues) {
  KernelRunner runner;
  const double inf = std::numeric_limits<double>::infinity();
  StatusOr<Tensor> d = runner.RunOne(
      "Erf", {Tensor::FromVector<double>({0, 0.5, -1.5, 1e-10, 30, -1e300, inf, -inf})});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TENSOR_NEAR(*d,
                     Tensor::FromVector<double>({0, 0.5204998778130465, -0.9661051464753108,
                                                 1.1283791670955126e-10, 1, -1, 1, -1}),
                     0, 1e-15);
  const float inf_f = std::numeric_limits<float>::infinity();
  StatusOr<Tensor> f = runner.RunOne(
      "Erf", {Tensor::FromVector<float>({0, 0.5f, -1.5f, 1e-10f, 30, -1e30f, inf_f, -inf_f})});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TENSOR_NEAR(*f,
                     Tensor::FromVector<float>({0, 0.5204998778130465f, -0.9661051464753108f,
                                                1.1283791670955126e-10f, 1, -1, 1, -1}),
                     0, 1e-6);
}

TEST(CwiseUnaryOpsTest, ReusesTheInputBufferWhenNoOneElseHoldsIt) {
  KernelRunner runner;
  Tensor x = RandomTensor<float>(TensorShape({16}), 5);
  const void* data = x.raw_data();
  std::vector<Tensor> inputs;
  inputs.push_back(std::move(x));
  StatusOr<Tensor> y = runner.RunOne("Exp", std::move(inputs));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->raw_data(), data);
  // A held input is left untouched.
  Tensor held = Tensor::FromVector<float>({1, 2});
  StatusOr<Tensor> z = runner.RunOne("Neg", {held});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_FALSE(z->SharesBufferWith(held));
  EXPECT_TENSOR_EQ(held, Tensor::FromVector<float>({1, 2}));
}

TEST(CwiseUnaryOpsTest, UnregisteredDtypesAreErrors) {
  KernelRunner runner;
  EXPECT_FALSE(runner.RunOne("Sqrt", {Tensor::FromVector<int32_t>({4})}).ok());
  EXPECT_FALSE(runner.RunOne("Log", {Tensor::FromVector<int64_t>({4})}).ok());
  EXPECT_FALSE(runner.RunOne("Neg", {Tensor::FromVector<bool>({true})}).ok());
  EXPECT_FALSE(runner.RunOne("Rsqrt", {Tensor::FromVector<int32_t>({4})}).ok());
  EXPECT_FALSE(runner.RunOne("Log1p", {Tensor::FromVector<int64_t>({4})}).ok());
  EXPECT_FALSE(runner.RunOne("Abs", {Tensor::FromVector<bool>({true})}).ok());
  EXPECT_FALSE(runner.RunOne("Erf", {Tensor::FromVector<int32_t>({1})}).ok());
}

}  // namespace
}  // namespace weft::kernels
