// Aligned host memory for tensor buffers, with process-wide counters of bytes in use and the peak,
// so tests and benchmarks can see when intermediate tensors are freed. Thread-safe.
// Large blocks (kLargeBlockBytes and up) are kept after they are freed, up to kMaxCachedBytes in
// all, and handed out again for the same rounded size: the system allocator returns such blocks
// to the kernel, and touching a fresh 64 MB block costs as much page faulting as summing it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft {

inline constexpr size_t kTensorAlignment = 64;

// Returns memory aligned to kTensorAlignment, or nullptr when the system is out of memory.
void* AllocateAligned(size_t bytes);
void FreeAligned(void* pointer, size_t bytes);

inline constexpr size_t kLargeBlockBytes = size_t{4} << 20;
inline constexpr size_t kMaxCachedBytes = size_t{256} << 20;
// Returns every cached large block to the system.
void ReleaseCachedMemory();

struct AllocatorStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t allocation_count = 0;
  int64_t cached_bytes = 0;  // freed large blocks kept for reuse
};
AllocatorStats GetAllocatorStats();
// Sets the peak to the current bytes in use (to measure the peak of one region of code).
void ResetPeakBytesInUse();

}  // namespace weft
