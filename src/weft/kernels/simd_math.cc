// AVX-512 exp and exact GELU; see simd_math.h.
#include "weft/kernels/simd_math.h"

#include <cstdint>

#include "weft/core/logging.h"
#include "weft/kernels/nn/gelu_math.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WEFT_HAVE_SIMD_MATH 1
// GCC 12's AVX-512 intrinsics start from a deliberately uninitialised register and warn about it
// inside its own headers (see CMakeLists.txt).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#endif

namespace weft::kernels::simd {

#ifdef WEFT_HAVE_SIMD_MATH
namespace {

#define WEFT_SIMD_TARGET __attribute__((target("avx512f")))

// The GELU's constants as gelu_math.h has them for Eigen's path.
constexpr float kInvSqrt2Pi = static_cast<float>(gelu::kInvSqrt2Pi);
constexpr float kSqrtHalf = static_cast<float>(gelu::kSqrtHalf);
// Beyond |x| = 100 every term x multiplies in the slope is 0 in float32; clamping keeps x^2 finite
// (as gelu_math.h does).
constexpr float kSaturated = static_cast<float>(gelu::kSaturated);

// erf(z) = z P(z^2) / Q(z^2) for |z| <= 4 (beyond, erf is +-1 in float32): P of degree 6 and Q
// of degree 4 (Q(0) = 1) fitted for Weft by linearised least squares on 3,000 Chebyshev nodes of
// [0, 4], reweighted 60 times towards the largest relative error: 6.5e-8 in double. One division
// and no exponential, where an erfc through exp costs two.
constexpr float kErfNumerator[] = {
    1.1283790946992844f,     0.2071088493028401f,      0.051522680624613196f, 0.003989846850613918f,
    0.00014726706124014617f, -1.9422066749492928e-06f, 1.911076757954433e-08f};
constexpr float kErfDenominator[] = {1.0f, 0.5168766935247366f, 0.11796393153178017f,
                                     0.014956637770294122f, 0.0010209295884821726f};

WEFT_SIMD_TARGET inline __m512 Set(float value) { return _mm512_set1_ps(value); }

WEFT_SIMD_TARGET inline __mmask16 FirstLanes(int64_t count) {
  return static_cast<__mmask16>(count >= 16 ? 0xffff : (1u << count) - 1);
}

// exp(a) = 2^k exp(r) with k = round(a / ln 2) and r = a - k ln 2 in [-ln 2 / 2, ln 2 / 2] (ln 2 in
// two parts, so that r is exact), exp(r) by its Taylor polynomial to r^7 (truncation below 6e-9
// there), 2^k applied by scalef.
WEFT_SIMD_TARGET inline __m512 Exp(__m512 a) {
  // min/max return their second operand for a NaN first one: NaN passes through.
  const __m512 clamped = _mm512_max_ps(Set(-88.0f), _mm512_min_ps(Set(88.7f), a));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(clamped, Set(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, Set(0.693359375f), clamped);
  r = _mm512_fnmadd_ps(k, Set(-2.12194440e-4f), r);
  __m512 p = Set(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, Set(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, Set(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, Set(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, Set(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, Set(0.5f));
  p = _mm512_fmadd_ps(p, r, Set(1.0f));
  p = _mm512_fmadd_ps(p, r, Set(1.0f));
  __m512 result = _mm512_scalef_ps(p, k);
  result = _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(a, Set(-87.3f), _CMP_LT_OQ),
                              _mm512_setzero_ps());
  return _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(a, Set(88.7f), _CMP_GT_OQ),
                            Set(__builtin_inff()));
}

// Phi(x) and, with kDensity, x phi(x) (phi the standard normal density), the two terms of the
// exact GELU's slope.
struct Normal {
  __m512 cdf;
  __m512 x_density;
};

template <bool kDensity>
WEFT_SIMD_TARGET inline Normal StandardNormal(__m512 x) {
  const __m512 xc = _mm512_max_ps(Set(-kSaturated), _mm512_min_ps(Set(kSaturated), x));
  // Phi(x) = (1 + erf(z)) / 2, z = x / sqrt 2 clamped to [-4, 4].
  const __m512 z =
      _mm512_max_ps(Set(-4.0f), _mm512_min_ps(Set(4.0f), _mm512_mul_ps(xc, Set(kSqrtHalf))));
  const __m512 z2 = _mm512_mul_ps(z, z);
  __m512 numerator = Set(kErfNumerator[6]);
#pragma GCC unroll 6
  for (int i = 5; i >= 0; --i) numerator = _mm512_fmadd_ps(numerator, z2, Set(kErfNumerator[i]));
  __m512 denominator = Set(kErfDenominator[4]);
#pragma GCC unroll 4
  for (int i = 3; i >= 0; --i)
    denominator = _mm512_fmadd_ps(denominator, z2, Set(kErfDenominator[i]));
  __m512 erf = _mm512_div_ps(_mm512_mul_ps(z, numerator), denominator);
  // From |z| = 3.95 erf is +-1 in float32 (1 - erfc rounds to 1): exactly, so that Phi of a large
  // negative x is 0 and its GELU 0.
  const __m512 sign_one = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(INT32_MIN)),
                      _mm512_castps_si512(Set(1.0f))));
  erf = _mm512_mask_mov_ps(erf, _mm512_cmp_ps_mask(_mm512_abs_ps(z), Set(3.95f), _CMP_GE_OQ),
                           sign_one);
  Normal normal{.cdf = _mm512_fmadd_ps(erf, Set(0.5f), Set(0.5f)),
                .x_density = _mm512_setzero_ps()};
  if constexpr (kDensity) {
    // exp(-x^2 / 2) from x^2 split exactly into x2 + x2_low: float32's rounding of the square
    // alone would cost a relative error of x^2 ulps.
    const __m512 x2 = _mm512_mul_ps(xc, xc);
    const __m512 x2_low = _mm512_fmsub_ps(xc, xc, x2);
    const __m512 gauss = _mm512_mul_ps(Exp(_mm512_mul_ps(x2, Set(-0.5f))),
                                       _mm512_fnmadd_ps(x2_low, Set(0.5f), Set(1.0f)));
    normal.x_density = _mm512_mul_ps(_mm512_mul_ps(xc, Set(kInvSqrt2Pi)), gauss);
  }
  return normal;
}

// Whole vectors load and store unmasked: AVX-512's masked stores are slow on AMD's Zen 4 and 5
// once the data is not in cache (a GELU over 4M values took twice as long with them). Only a
// row's last partial vector is masked (kWhole false).
template <bool kWhole>
WEFT_SIMD_TARGET inline __m512 Load(const float* at, __mmask16 lanes) {
  return kWhole ? _mm512_loadu_ps(at) : _mm512_maskz_loadu_ps(lanes, at);
}

template <bool kWhole>
WEFT_SIMD_TARGET inline void Store(float* at, __mmask16 lanes, __m512 value) {
  if constexpr (kWhole) {
    _mm512_storeu_ps(at, value);
  } else {
    _mm512_mask_storeu_ps(at, lanes, value);
  }
}

template <bool kWhole>
WEFT_SIMD_TARGET inline __m512 ExpShiftedVector(float* at, __mmask16 lanes, __m512 shift) {
  const __m512 e = Exp(_mm512_sub_ps(Load<kWhole>(at, lanes), shift));
  Store<kWhole>(at, lanes, e);
  return kWhole ? e : _mm512_maskz_mov_ps(lanes, e);
}

template <bool kWhole>
WEFT_SIMD_TARGET inline void GeluVector(const float* x, float* y, __mmask16 lanes) {
  const __m512 v = Load<kWhole>(x, lanes);
  Store<kWhole>(y, lanes, _mm512_mul_ps(v, StandardNormal<false>(v).cdf));
}

template <bool kWhole>
WEFT_SIMD_TARGET inline void GeluSlopeVector(const float* gradient, const float* x, float* g,
                                             __mmask16 lanes) {
  const __m512 v = Load<kWhole>(x, lanes);
  const Normal normal = StandardNormal<true>(v);
  __m512 slope = _mm512_add_ps(normal.cdf, normal.x_density);
  // A NaN feature has no slope: its gradient is NaN, as the Eigen path gives.
  slope = _mm512_mask_mov_ps(slope, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v);
  Store<kWhole>(g, lanes, _mm512_mul_ps(Load<kWhole>(gradient, lanes), slope));
}

WEFT_SIMD_TARGET float ExpShiftedSumAvx512(float* row, int64_t n, float shift) {
  const __m512 shift_vector = Set(shift);
  __m512 sum = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    sum = _mm512_add_ps(sum, ExpShiftedVector<true>(row + i, 0xffff, shift_vector));
  }
  if (i < n)
    sum = _mm512_add_ps(sum, ExpShiftedVector<false>(row + i, FirstLanes(n - i), shift_vector));
  return _mm512_reduce_add_ps(sum);
}

WEFT_SIMD_TARGET void ExactGeluAvx512(const float* x, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) GeluVector<true>(x + i, y + i, 0xffff);
  if (i < n) GeluVector<false>(x + i, y + i, FirstLanes(n - i));
}

WEFT_SIMD_TARGET void MultiplyByExactGeluSlopeAvx512(const float* gradient, const float* x,
                                                     int64_t n, float* g) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) GeluSlopeVector<true>(gradient + i, x + i, g + i, 0xffff);
  if (i < n) GeluSlopeVector<false>(gradient + i, x + i, g + i, FirstLanes(n - i));
}

}  // namespace

bool SimdMathIsAvailable() {
  static const bool available = __builtin_cpu_supports("avx512f");
  return available;
}

float ExpShiftedSum(float* row, int64_t n, float shift) {
  return ExpShiftedSumAvx512(row, n, shift);
}

void ExactGelu(const float* x, int64_t n, float* y) { ExactGeluAvx512(x, n, y); }

void MultiplyByExactGeluSlope(const float* gradient, const float* x, int64_t n, float* g) {
  MultiplyByExactGeluSlopeAvx512(gradient, x, n, g);
}

#else  // no AVX-512 intrinsics on this platform: callers take their Eigen path.

bool SimdMathIsAvailable() { return false; }

float ExpShiftedSum(float*, int64_t, float) {
  WEFT_CHECK(false) << "simd::ExpShiftedSum called where SimdMathIsAvailable() is false";
  return 0;
}
void ExactGelu(const float*, int64_t, float*) {
  WEFT_CHECK(false) << "simd::ExactGelu called where SimdMathIsAvailable() is false";
}
void MultiplyByExactGeluSlope(const float*, const float*, int64_t, float*) {
  WEFT_CHECK(false) << "simd::MultiplyByExactGeluSlope called where SimdMathIsAvailable() is false";
}

#endif

}  // namespace weft::kernels::simd
