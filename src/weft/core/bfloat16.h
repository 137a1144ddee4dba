// bfloat16: the element type of DataType::kBFloat16, float32's sign, 8-bit exponent and top 7
// mantissa bits in 16 bits (the reference's DT_BFLOAT16). Same range as float32, about 3 decimal
// digits: mixed precision keeps weights in float32 and runs the large products in bfloat16.
//
// Conversions are explicit, never implicit, so that no arithmetic silently runs in bfloat16:
// from float32 rounds to nearest even (the rounding of x86's VCVTNEPS2BF16 and of Eigen's and
// PyTorch's bfloat16, but keeping subnormals rather than flushing them, so that the result does not
// depend on the CPU); a NaN stays a NaN (made quiet, sign kept); infinities stay infinite; a finite
// value beyond bfloat16's largest rounds to infinity. To float32 is exact. Bit-compatible with
// Eigen::bfloat16 and with safetensors' "BF16" (the upper half of the float32's bits).
//
// Weft defines its own type rather than aliasing Eigen::bfloat16 because core/ uses only the
// standard library (every layer includes dtype.h; Eigen's header needs all of Eigen/Core).
// A value type; the bulk converters are pure functions, safe from any thread.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <type_traits>

namespace weft {

namespace internal {
// The bfloat16 bits nearest to `value` (see the file comment). Written without branches so that
// loops over it vectorise.
constexpr uint16_t FloatToBFloat16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  // Round to nearest even: add just under half an ulp of the kept part, plus its lowest bit.
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  // Rounding could carry a NaN's payload into infinity: keep the upper bits, set the quiet bit.
  const uint32_t quiet_nan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}
constexpr float BFloat16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}
}  // namespace internal

struct bfloat16 {
  constexpr bfloat16() = default;
  constexpr explicit bfloat16(float value) : bits(internal::FloatToBFloat16Bits(value)) {}
  constexpr explicit operator float() const { return internal::BFloat16BitsToFloat(bits); }
  // Other arithmetic types go through float32 both ways, as Eigen's bfloat16 does: from float64
  // that rounds twice, which can differ from rounding once only in the last bit of a tie.
  template <typename T>
  requires std::is_arithmetic_v<T>
  constexpr explicit bfloat16(T value) : bfloat16(static_cast<float>(value)) {}
  template <typename T>
  requires std::is_arithmetic_v<T>
  constexpr explicit operator T() const {
    return static_cast<T>(internal::BFloat16BitsToFloat(bits));
  }

  static constexpr bfloat16 FromBits(uint16_t raw) {
    bfloat16 out;
    out.bits = raw;
    return out;
  }

  uint16_t bits = 0;  // +0 by default
};
static_assert(sizeof(bfloat16) == 2 && alignof(bfloat16) == 2);

// Elementwise conversions of whole arrays: out[i] = bfloat16(in[i]) or float(in[i]). `out` holds
// in.size() elements and does not overlap `in`. Vectorised (the same rounding as above on every
// CPU); cost is that of reading and writing the bytes.
void FloatToBFloat16(std::span<const float> in, bfloat16* out);
void BFloat16ToFloat(std::span<const bfloat16> in, float* out);

}  // namespace weft
