#include "weft/train/random_seed.h"

#include <atomic>

namespace weft::train {
namespace {

// The seed and whether it is set, in one word each; a reader may see a new seed with the old
// flag for an instant, which only matters to a program that races SetRandomSeed with a build.
std::atomic<int64_t> global_seed{0};
std::atomic<bool> global_seed_set{false};

// FNV-1a over `bytes`, continuing from `hash`.
uint64_t Fnv1a(uint64_t hash, const void* bytes, size_t size) {
  const auto* data = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace

void SetRandomSeed(int64_t seed) {
  global_seed.store(seed);
  global_seed_set.store(true);
}

void ClearRandomSeed() { global_seed_set.store(false); }

std::optional<int64_t> GlobalRandomSeed() {
  if (!global_seed_set.load()) return std::nullopt;
  return global_seed.load();
}

int64_t DeriveSeed(int64_t seed, std::string_view name) {
  // The seed's bytes little-endian first, so the hash does not depend on the host's byte order.
  unsigned char seed_bytes[8];
  for (int i = 0; i < 8; ++i) seed_bytes[i] = static_cast<unsigned char>(uint64_t(seed) >> (8 * i));
  uint64_t hash = Fnv1a(0xcbf29ce484222325ULL, seed_bytes, sizeof(seed_bytes));
  hash = Fnv1a(hash, name.data(), name.size());
  // A positive int64 (seed attributes are signed); 0 means "no seed" to the random kernels.
  const auto derived = static_cast<int64_t>(hash >> 1);
  return derived == 0 ? 1 : derived;
}

}  // namespace weft::train
