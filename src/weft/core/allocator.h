// Aligned host memory for tensor buffers, with process-wide counters of bytes in use and the peak,
// so tests and benchmarks can see when intermediate tensors are freed. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft {

inline constexpr size_t kTensorAlignment = 64;

// Returns memory aligned to kTensorAlignment, or nullptr when the system is out of memory.
void* AllocateAligned(size_t bytes);
void FreeAligned(void* pointer, size_t bytes);

struct AllocatorStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t allocation_count = 0;
};
AllocatorStats GetAllocatorStats();
// Sets the peak to the current bytes in use (to measure the peak of one region of code).
void ResetPeakBytesInUse();

}  // namespace weft
