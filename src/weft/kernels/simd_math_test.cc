// Tests for the AVX-512 exp and exact GELU (simd_math.h) against the same functions in double:
// dense ranges and every lane count of a tail, and the edges (underflow to 0, overflow to +inf,
// NaN, saturated and infinite GELU inputs). Skipped where the CPU lacks AVX-512.
#include "weft/kernels/simd_math.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace weft::kernels::simd {
namespace {

#define SKIP_WITHOUT_AVX512() \
  if (!SimdMathIsAvailable()) GTEST_SKIP() << "this CPU lacks AVX-512"

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Within `ulps` float32 ulps of `expected`, relative (and exactly 0 where expected is).
void ExpectUlpsNear(float actual, double expected, double ulps, const char* what, double x) {
  if (expected == 0) {
    EXPECT_EQ(actual, 0.0f) << what << "(" << x << ")";
    return;
  }
  EXPECT_NEAR(actual, expected, ulps * std::ldexp(std::abs(expected), -23))
      << what << "(" << x << ")";
}

double ExactGeluOf(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double ExactGeluSlopeOf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
}

std::vector<float> Range(float first, float last, int count) {
  std::vector<float> values;
  for (int i = 0; i < count; ++i) values.push_back(first + (last - first) * i / (count - 1));
  return values;
}

TEST(SimdMathTest, ExpIsWithinTwoUlpsAndSaturates) {
  SKIP_WITHOUT_AVX512();
  std::vector<float> x = Range(-87, 88.5f, 100001);
  std::vector<float> row = x;
  ExpShiftedSum(row.data(), static_cast<int64_t>(row.size()), 0.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    ExpectUlpsNear(row[i], std::exp(static_cast<double>(x[i])), 2, "exp", x[i]);
  }
  // The sum, over a range it does not overflow.
  row = Range(-30, 30, 1001);
  const float sum = ExpShiftedSum(row.data(), static_cast<int64_t>(row.size()), 0.0f);
  double expected_sum = 0;
  for (float v : Range(-30, 30, 1001)) expected_sum += std::exp(static_cast<double>(v));
  EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum);
  // Below float's normal range 0, above its largest +inf, NaN stays NaN; the shift is subtracted.
  std::vector<float> edges = {-87, -1e30f, -kInf, 90, kInf, kNaN, 3};
  ExpShiftedSum(edges.data(), static_cast<int64_t>(edges.size()), 1.0f);
  EXPECT_EQ(edges[0], 0.0f);
  EXPECT_EQ(edges[1], 0.0f);
  EXPECT_EQ(edges[2], 0.0f);
  EXPECT_EQ(edges[3], kInf);
  EXPECT_EQ(edges[4], kInf);
  EXPECT_TRUE(std::isnan(edges[5]));
  ExpectUlpsNear(edges[6], std::exp(2.0), 2, "exp", 2);
}

TEST(SimdMathTest, EveryTailLengthIsComputedAndNothingPastItWritten) {
  SKIP_WITHOUT_AVX512();
  for (int64_t n = 0; n <= 33; ++n) {
    std::vector<float> row(40, 7.0f);
    const float sum = ExpShiftedSum(row.data(), n, 7.0f);
    EXPECT_FLOAT_EQ(sum, static_cast<float>(n)) << n;
    for (int64_t i = 0; i < 40; ++i) EXPECT_EQ(row[i], i < n ? 1.0f : 7.0f) << n << " " << i;
    std::vector<float> x(40, 1.0f), y(40, -3.0f);
    ExactGelu(x.data(), n, y.data());
    for (int64_t i = 0; i < 40; ++i) {
      if (i < n) {
        ExpectUlpsNear(y[i], ExactGeluOf(1), 4, "gelu", 1);
      } else {
        EXPECT_EQ(y[i], -3.0f);
      }
    }
  }
}

// Phi to float32's rounding (an absolute error of an ulp of 1), so the GELU to a few ulps of
// itself plus |x| times that; the slope likewise.
TEST(SimdMathTest, ExactGeluAndItsSlopeMatchDouble) {
  SKIP_WITHOUT_AVX512();
  std::vector<float> x = Range(-12, 13, 200001);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-3f, -1e-3f}) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(n), gradient(n, 1.5f), g(n);
  ExactGelu(x.data(), n, y.data());
  MultiplyByExactGeluSlope(gradient.data(), x.data(), n, g.data());
  const double ulp = std::ldexp(1.0, -23);
  for (int64_t i = 0; i < n; ++i) {
    const double expected = ExactGeluOf(x[i]);
    EXPECT_NEAR(y[i], expected, 8 * ulp * std::abs(expected) + 2 * ulp * std::abs(x[i]))
        << "gelu(" << x[i] << ")";
    const double slope = ExactGeluSlopeOf(x[i]);
    // The slope is a difference of two terms near x = -0.75 (its zero): bound by their size.
    const double terms = std::abs(0.5 * std::erfc(-x[i] / std::sqrt(2.0))) +
                         std::abs(x[i] * std::exp(-0.5 * x[i] * x[i]) / std::sqrt(2 * M_PI));
    EXPECT_NEAR(g[i], 1.5 * slope, 1.5 * (8 * ulp * terms + 2 * ulp)) << "slope(" << x[i] << ")";
  }
}

TEST(SimdMathTest, ExactGeluSaturatesAndPassesNaN) {
  SKIP_WITHOUT_AVX512();
  const std::vector<float> x = {100, -100, 1e30f, -1e30f, kInf, kNaN};
  std::vector<float> y(x.size()), g(x.size());
  const std::vector<float> ones(x.size(), 1.0f);
  ExactGelu(x.data(), static_cast<int64_t>(x.size()), y.data());
  MultiplyByExactGeluSlope(ones.data(), x.data(), static_cast<int64_t>(x.size()), g.data());
  EXPECT_EQ(y[0], 100.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 1e30f);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[4], kInf);
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_EQ(g[1], 0.0f);
  EXPECT_EQ(g[2], 1.0f);
  EXPECT_EQ(g[3], 0.0f);
  EXPECT_EQ(g[4], 1.0f);
  EXPECT_TRUE(std::isnan(g[5]));
}

}  // namespace
}  // namespace weft::kernels::simd
