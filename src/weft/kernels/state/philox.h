// Philox4x32-10, the counter-based random bit generator of Salmon, Moraes, Dror and Shaw
// ("Parallel random numbers: as easy as 1, 2, 3", SC 2011): a keyed bijection from a 128-bit
// counter to 128 random bits. Any element of a random tensor can be computed from its index
// alone, so tensors can be filled by any number of threads with the same result. Also the
// conversions from random bits to uniform and normal values. Stateless; safe from any thread.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace weft::kernels::state {

class Philox4x32 {
 public:
  using Block = std::array<uint32_t, 4>;
  using Key = std::array<uint32_t, 2>;

  // The ten-round Philox output for `counter` under `key`.
  static Block Generate(Block counter, Key key) {
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        key[0] += kWeyl0;
        key[1] += kWeyl1;
      }
      counter = Round(counter, key);
    }
    return counter;
  }

 private:
  static constexpr uint32_t kMul0 = 0xD2511F53u;
  static constexpr uint32_t kMul1 = 0xCD9E8D57u;
  static constexpr uint32_t kWeyl0 = 0x9E3779B9u;
  static constexpr uint32_t kWeyl1 = 0xBB67AE85u;

  static Block Round(const Block& c, const Key& key) {
    uint64_t p0 = uint64_t{kMul0} * c[0];
    uint64_t p1 = uint64_t{kMul1} * c[2];
    auto hi = [](uint64_t p) { return static_cast<uint32_t>(p >> 32); };
    auto lo = [](uint64_t p) { return static_cast<uint32_t>(p); };
    return {hi(p1) ^ c[1] ^ key[0], lo(p1), hi(p0) ^ c[3] ^ key[1], lo(p0)};
  }
};

// The SplitMix64 finalizer: a bijective mix of 64 bits.
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The Philox key of a random op's (seed, seed2) attrs (not both zero).
inline Philox4x32::Key KeyFromSeeds(int64_t seed, int64_t seed2) {
  uint64_t mixed =
      SplitMix64(static_cast<uint64_t>(seed) ^ SplitMix64(static_cast<uint64_t>(seed2)));
  return {static_cast<uint32_t>(mixed), static_cast<uint32_t>(mixed >> 32)};
}

// A float in [0, 1) from the top 24 bits of `bits`.
inline float UniformFloat(uint32_t bits) { return static_cast<float>(bits >> 8) * 0x1.0p-24f; }
// A double in [0, 1) from the top 53 bits of hi:lo.
inline double UniformDouble(uint32_t hi, uint32_t lo) {
  uint64_t bits = (uint64_t{hi} << 32) | lo;
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// Two independent standard normals from two uniforms in [0, 1) (Box-Muller). 1 - u1 lies in
// (0, 1], so the logarithm is finite.
template <typename T>
inline void BoxMuller(T u1, T u2, T* z0, T* z1) {
  constexpr T kTwoPi = static_cast<T>(6.283185307179586476925286766559);
  T radius = std::sqrt(T(-2) * std::log(T(1) - u1));
  T angle = kTwoPi * u2;
  *z0 = radius * std::cos(angle);
  *z1 = radius * std::sin(angle);
}

}  // namespace weft::kernels::state
