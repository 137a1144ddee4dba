// Elementwise float32 functions on 16 values at a time with AVX-512, for the kernels whose time
// they set under mixed precision: exp for the attention's softmax, and the exact GELU and its
// slope (Eigen's erf and exp run at AVX2's width in a Weft built for x86-64-v3, and its erf is a
// long rational function). Callers keep their Eigen path where the CPU lacks AVX-512
// (SimdMathIsAvailable() false); both paths agree to a few float32 ulps.
//
// exp is exact to ~1 ulp, 0 below -87.3 (where float32's normal range ends), +inf above 88.7,
// NaN for NaN. The exact GELU is x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2, with erf a rational
// function fitted for Weft (simd_math.cc; relative error 6.5e-8): Phi to float32's rounding, as
// Eigen's path computes it (so both lose relative precision far out on the negative side, where
// 1 + erf cancels).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

namespace weft::kernels::simd {

// Whether this CPU has AVX-512 (the functions below may be called).
bool SimdMathIsAvailable();

// row[j] = exp(row[j] - shift) for j < n; returns their sum.
float ExpShiftedSum(float* row, int64_t n, float shift);

// y[i] = gelu(x[i]), the exact (erf) form; y may be x.
void ExactGelu(const float* x, int64_t n, float* y);

// g[i] = gradient[i] * gelu'(x[i]), the exact form; g may be gradient.
void MultiplyByExactGeluSlope(const float* gradient, const float* x, int64_t n, float* g);

}  // namespace weft::kernels::simd
