// Tests for Gelu and GeluGrad, exact and approximate: hand values, long double reference loops over
// float and double tensors of ranks 0 to 4 (empty, threaded), the negative tail, huge inputs (no
// inf or NaN), GeluGrad against central differences of Gelu, and error paths.
#include <cmath>
#include <vector>

#include "weft/kernels/testing/bfloat16_test_util.h"
#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ExpectKernelError;
using testing::NumericGradient;
using testing::RandomTensor;
using testing::RunKernelOnly;
using testing::WeightedSum;
using weft::testing::KernelRunner;

AttrMap Approximate(bool approximate) { return {{"approximate", MakeAttrValue(approximate)}}; }

// gelu(x) and gelu'(x) in long double. The approximate form's 0.5 (1 + tanh u) and
// 0.25 (1 - tanh^2 u) are written 1 / (1 + e^-2u) and its product with 1 / (1 + e^2u), which do not
// cancel to 0 for very negative x even in long double.
long double ReferenceGelu(long double x, bool approximate) {
  if (approximate) {
    const long double u = std::sqrt(2 / M_PIl) * (x + 0.044715L * x * x * x);
    return x / (1 + std::exp(-2 * u));
  }
  return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
}
long double ReferenceGeluSlope(long double x, bool approximate) {
  if (approximate) {
    const long double c = std::sqrt(2 / M_PIl);
    const long double u = c * (x + 0.044715L * x * x * x);
    const long double s = 1 / (1 + std::exp(-2 * u)), one_minus_s = 1 / (1 + std::exp(2 * u));
    return s + 2 * x * s * one_minus_s * c * (1 + 3 * 0.044715L * x * x);
  }
  return 0.5L * std::erfc(-x / std::sqrt(2.0L)) + x * std::exp(-x * x / 2) / std::sqrt(2 * M_PIl);
}

template <typename T>
Tensor Reference(const Tensor& x, bool approximate) {
  Tensor out(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    out.data<T>()[i] = static_cast<T>(ReferenceGelu(x.data<T>()[i], approximate));
  }
  return out;
}
template <typename T>
Tensor ReferenceGrad(const Tensor& g, const Tensor& x, bool approximate) {
  Tensor out(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    out.data<T>()[i] =
        static_cast<T>(g.data<T>()[i] * ReferenceGeluSlope(x.data<T>()[i], approximate));
  }
  return out;
}

TEST(GeluTest, HandComputed) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<double>({0, 1, -1, 2, -3, 0.5});
  StatusOr<Tensor> exact = runner.RunOne("Gelu", {x}, Approximate(false));
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_TENSOR_NEAR(
      *exact,
      Tensor::FromVector<double>({0, 0.8413447460685429, -0.15865525393145707, 1.9544997361036416,
                                  -0.00404969409489031, 0.34573123063700656}),
      1e-15, 1e-14);
  StatusOr<Tensor> approximate = runner.RunOne("Gelu", {x}, Approximate(true));
  ASSERT_TRUE(approximate.ok()) << approximate.status();
  EXPECT_TENSOR_NEAR(
      *approximate,
      Tensor::FromVector<double>({0, 0.8411919906082768, -0.15880800939172324, 1.954597694087775,
                                  -0.0036373920817729943, 0.34571400982514394}),
      1e-15, 1e-14);
  // The default is the exact form; gelu'(0) = 0.5 in both.
  StatusOr<Tensor> by_default = runner.RunOne("Gelu", {x});
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  EXPECT_TENSOR_EQ(*by_default, *exact);
  for (bool mode : {false, true}) {
    StatusOr<Tensor> slope =
        runner.RunOne("GeluGrad", {Tensor::FromVector<float>({2}), Tensor::FromVector<float>({0})},
                      Approximate(mode));
    ASSERT_TRUE(slope.ok()) << slope.status();
    EXPECT_TENSOR_EQ(*slope, Tensor::FromVector<float>({1}));
  }
}

template <typename T>
void CheckAgainstReference(double tolerance) {
  KernelRunner runner;
  uint32_t seed = 40;
  for (const TensorShape& shape :
       {TensorShape({}), TensorShape({0}), TensorShape({7}), TensorShape({3, 0, 2}),
        TensorShape({4, 5, 3}), TensorShape({2, 3, 4, 5}), TensorShape({300, 170})}) {
    Tensor x = RandomTensor<T>(shape, ++seed, -6, 6);
    Tensor g = RandomTensor<T>(shape, ++seed, -2, 2);
    for (bool approximate : {false, true}) {
      SCOPED_TRACE(StrCat("shape ", shape, " ", DataTypeName(DataTypeToEnum<T>::value),
                          " approximate ", approximate));
      StatusOr<Tensor> y = runner.RunOne("Gelu", {x}, Approximate(approximate));
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_TENSOR_NEAR(*y, Reference<T>(x, approximate), tolerance, tolerance);
      StatusOr<Tensor> dx = runner.RunOne("GeluGrad", {g, x}, Approximate(approximate));
      ASSERT_TRUE(dx.ok()) << dx.status();
      EXPECT_TENSOR_NEAR(*dx, ReferenceGrad<T>(g, x, approximate), tolerance, tolerance);
      // Inputs nothing else holds: the output takes over the first one's buffer.
      Tensor own_x = x.DeepCopy();
      const void* buffer = own_x.raw_data();
      std::vector<Tensor> inputs;
      inputs.push_back(std::move(own_x));
      StatusOr<Tensor> in_place =
          runner.RunOne("Gelu", std::move(inputs), Approximate(approximate));
      ASSERT_TRUE(in_place.ok()) << in_place.status();
      EXPECT_TENSOR_NEAR(*in_place, Reference<T>(x, approximate), tolerance, tolerance);
      if (shape.num_elements() > 0) {
        EXPECT_EQ(in_place->raw_data(), buffer);
      }
    }
  }
}

TEST(GeluTest, MatchesReferenceFloat) { CheckAgainstReference<float>(2e-6); }
TEST(GeluTest, MatchesReferenceDouble) { CheckAgainstReference<double>(1e-14); }

// In float the approximate form keeps its relative precision in the negative tail, where
// 0.5 x (1 + tanh u) computed as written cancels to nothing (1 + tanh u < 1e-7 from x = -4 on).
TEST(GeluTest, ApproximateFloatKeepsRelativePrecisionForNegativeInputs) {
  KernelRunner runner;
  Tensor x = RandomTensor<float>({1000}, 3, -9, -3);
  Tensor g = Tensor::FromVector<float>(std::vector<float>(1000, 1));
  StatusOr<Tensor> y = runner.RunOne("Gelu", {x}, Approximate(true));
  StatusOr<Tensor> dx = runner.RunOne("GeluGrad", {g, x}, Approximate(true));
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_TRUE(dx.ok()) << dx.status();
  EXPECT_TENSOR_NEAR(*y, Reference<float>(x, true), 0, 2e-5);
  EXPECT_TENSOR_NEAR(*dx, ReferenceGrad<float>(g, x, true), 0, 2e-5);
}

// x^3 overflows float beyond 7e12 and x^2 beyond 2e19: gelu must still give x (or 0) and its
// slope 1 (or 0), never inf or NaN.
template <typename T>
void CheckHugeInputs() {
  KernelRunner runner;
  const std::vector<T> values = {T(100),   T(-100), T(1e4),   T(-1e4), T(1e13),
                                 T(-1e13), T(1e30), T(-1e30), T(40),   T(-40)};
  Tensor x = Tensor::FromVector<T>(values);
  Tensor ones = Tensor::FromVector<T>(std::vector<T>(values.size(), T(1)));
  for (bool approximate : {false, true}) {
    SCOPED_TRACE(StrCat(DataTypeName(DataTypeToEnum<T>::value), " approximate ", approximate));
    StatusOr<Tensor> y = runner.RunOne("Gelu", {x}, Approximate(approximate));
    StatusOr<Tensor> dx = runner.RunOne("GeluGrad", {ones, x}, Approximate(approximate));
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_TRUE(dx.ok()) << dx.status();
    for (size_t i = 0; i < values.size(); ++i) {
      const T v = values[i];
      EXPECT_EQ(y->data<T>()[i], v > 0 ? v : T(0)) << v;
      EXPECT_EQ(dx->data<T>()[i], v > 0 ? T(1) : T(0)) << v;
    }
  }
}

TEST(GeluTest, HugeInputsGiveNoInfOrNaN) {
  CheckHugeInputs<float>();
  CheckHugeInputs<double>();
}

TEST(GeluTest, GradMatchesNumericDerivative) {
  KernelRunner runner;
  Tensor x = RandomTensor<double>({3, 4}, 7, -4, 4);
  Tensor weights = RandomTensor<double>({3, 4}, 8);
  for (bool approximate : {false, true}) {
    SCOPED_TRACE(StrCat("approximate ", approximate));
    Tensor numeric = NumericGradient(
        [&](const Tensor& in) {
          StatusOr<Tensor> y = runner.RunOne("Gelu", {in}, Approximate(approximate));
          return y.ok() ? WeightedSum(*y, weights) : 0.0;
        },
        x);
    StatusOr<Tensor> analytic = runner.RunOne("GeluGrad", {weights, x}, Approximate(approximate));
    ASSERT_TRUE(analytic.ok()) << analytic.status();
    EXPECT_TENSOR_NEAR(*analytic, numeric, 1e-8, 1e-8);
  }
}

// _FusedGelu is Gelu then a Cast to bfloat16 in one pass: the same bfloat16 values, for sizes
// below and above the parallel threshold and not a whole number of chunks, exact and approximate.
TEST(GeluTest, FusedGeluIsGeluRoundedToBFloat16) {
  KernelRunner runner(2);
  for (int64_t n : {int64_t{5}, int64_t{4099}, int64_t{70001}}) {
    const Tensor x = RandomTensor<float>(TensorShape({n}), 3, -6, 6);
    for (bool approximate : {false, true}) {
      SCOPED_TRACE(StrCat("n ", n, " approximate ", approximate));
      const AttrMap attrs = {{"approximate", MakeAttrValue(approximate)}};
      StatusOr<Tensor> fused = runner.RunOne("_FusedGelu", {x}, attrs);
      ASSERT_TRUE(fused.ok()) << fused.status();
      ASSERT_EQ(fused->dtype(), DataType::kBFloat16);
      StatusOr<Tensor> gelu = runner.RunOne("Gelu", {x}, attrs);
      ASSERT_TRUE(gelu.ok()) << gelu.status();
      StatusOr<Tensor> rounded =
          runner.RunOne("Cast", {*gelu}, {{"DstT", MakeAttrValue(DataType::kBFloat16)}});
      ASSERT_TRUE(rounded.ok()) << rounded.status();
      // Within one bfloat16 rounding: a scalar tail and a packet may differ in the last float bit.
      EXPECT_TENSOR_NEAR(testing::Widened(*fused), testing::Widened(*rounded), 1e-2, 8e-3);
    }
  }
}

TEST(GeluTest, ErrorsNameTheNode) {
  KernelRunner runner;
  ExpectKernelError(
      runner.RunOne("GeluGrad", {RandomTensor<float>({2, 3}, 1), RandomTensor<float>({3, 2}, 2)})
          .status(),
      "GeluGrad", "inputs must have the same shape");
  AttrMap attrs = Approximate(true);
  attrs["T"] = MakeAttrValue(DataType::kDouble);
  ExpectKernelError(
      RunKernelOnly("GeluGrad", {RandomTensor<double>({2, 3}, 1), RandomTensor<double>({6}, 2)},
                    attrs)
          .status(),
      "GeluGrad", "gradients and features must have the same shape, but are [2,3] and [6]");
  // No integer kernels: the op's type list rejects int32.
  EXPECT_FALSE(runner.RunOne("Gelu", {Tensor::FromVector<int32_t>({1})}).ok());
}

}  // namespace
}  // namespace weft::kernels
