#include "weft/core/bfloat16.h"

#include <cstddef>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WEFT_HAVE_AVX512_BF16_PATH 1
#endif

namespace weft {
namespace {

// Elements per block: a fixed trip count that -O2's cheap vectoriser turns into whole vectors
// (two AVX2 or one AVX-512 register of float32), with the remainder done one by one.
constexpr size_t kBlock = 16;

void FloatToBFloat16Portable(const float* __restrict src, bfloat16* __restrict dst, size_t n) {
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) dst[i + j].bits = internal::FloatToBFloat16Bits(src[i + j]);
  }
  for (; i < n; ++i) dst[i].bits = internal::FloatToBFloat16Bits(src[i]);
}

#ifdef WEFT_HAVE_AVX512_BF16_PATH
// VCVTNEPS2BF16 rounds 16 floats to nearest even in one instruction, where the portable loop's
// rounding, NaN test and narrowing take several per vector: mixed precision rounds tens of
// millions of values a step. It flushes subnormal inputs to zero, which the portable rounding
// keeps (see bfloat16.h), so a block holding a subnormal or a NaN takes the portable path: the
// result is the same bits on every CPU.
__attribute__((target("avx512f,avx512bf16"))) void FloatToBFloat16Avx512(
    const float* __restrict src, bfloat16* __restrict dst, size_t n) {
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i smallest_normal_minus_one = _mm512_set1_epi32(0x007fffff);
  const __m512i infinity = _mm512_set1_epi32(0x7f800000);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    const __m512 values = _mm512_loadu_ps(src + i);
    const __m512i bits = _mm512_and_si512(_mm512_castps_si512(values), magnitude);
    // Subnormal: 1 <= |bits| <= 0x7fffff, i.e. |bits| - 1 < 0x7fffff unsigned; NaN: > infinity.
    const __mmask16 special =
        _mm512_cmplt_epu32_mask(_mm512_sub_epi32(bits, one), smallest_normal_minus_one) |
        _mm512_cmpgt_epu32_mask(bits, infinity);
    if (special != 0) {
      FloatToBFloat16Portable(src + i, dst + i, kBlock);
      continue;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(values)));
  }
  FloatToBFloat16Portable(src + i, dst + i, n - i);
}

bool CpuHasAvx512BFloat16() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  return has;
}
#endif

}  // namespace

void FloatToBFloat16(std::span<const float> in, bfloat16* out) {
#ifdef WEFT_HAVE_AVX512_BF16_PATH
  if (CpuHasAvx512BFloat16()) return FloatToBFloat16Avx512(in.data(), out, in.size());
#endif
  FloatToBFloat16Portable(in.data(), out, in.size());
}

void BFloat16ToFloat(std::span<const bfloat16> in, float* out) {
  const bfloat16* __restrict src = in.data();
  float* __restrict dst = out;
  const size_t n = in.size();
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) dst[i + j] = internal::BFloat16BitsToFloat(src[i + j].bits);
  }
  for (; i < n; ++i) dst[i] = internal::BFloat16BitsToFloat(src[i].bits);
}

}  // namespace weft
