#include "weft/core/bfloat16.h"

#include <cstddef>

namespace weft {
namespace {

// Elements per block: a fixed trip count that -O2's cheap vectoriser turns into whole vectors
// (two AVX2 or one AVX-512 register of float32), with the remainder done one by one.
constexpr size_t kBlock = 16;

}  // namespace

void FloatToBFloat16(std::span<const float> in, bfloat16* out) {
  const float* __restrict src = in.data();
  bfloat16* __restrict dst = out;
  const size_t n = in.size();
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) dst[i + j].bits = internal::FloatToBFloat16Bits(src[i + j]);
  }
  for (; i < n; ++i) dst[i].bits = internal::FloatToBFloat16Bits(src[i]);
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
