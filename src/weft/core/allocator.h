// Allocator: where tensor buffers come from. Each device has one for its own memory; the host's is
// HostAllocator(), aligned host memory with process-wide counters of bytes in use and the peak (so
// tests and benchmarks can see when intermediate tensors are freed). Allocators are thread-safe.
// Host memory is shared by every device whose allocator is in host memory, so tensors pass between
// those without copies; memory of any other allocator is a space of its own (see SameMemorySpace).
// Host blocks of 256 KB and up are kept after they are freed, up to kMaxCachedBytes in all, and
// handed out again for the same rounded size (whole megabytes from kLargeBlockBytes): the system
// allocator returns such blocks to the kernel, and touching a fresh block costs as much page
// faulting as summing it (see allocator.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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
// HostAllocator()'s counters.
AllocatorStats GetAllocatorStats();
// Sets the peak to the current bytes in use (to measure the peak of one region of code).
void ResetPeakBytesInUse();

// Where memory lives: in the host's memory, which the CPU and every host-memory device share, or in
// a device's own memory, reached only through that device's copies (DeviceContext). Also says where
// an op's input or output must be (OpDefBuilder::HostMemory).
enum class MemoryType { kDevice, kHost };

// What a caller asks of a device's allocator (DeviceBase::GetAllocator): host memory even on a
// device with memory of its own (shape arguments, staging buffers).
struct AllocatorAttributes {
  bool on_host = false;
};

class Allocator {
 public:
  virtual ~Allocator() = default;

  // For messages: "host", "TEST_ARENA:0".
  virtual std::string Name() const = 0;
  // `bytes` (may be 0) aligned to `alignment` (a power of two, at most kTensorAlignment), or
  // nullptr when out of memory or the alignment is not supported.
  virtual void* AllocateRaw(size_t alignment, size_t bytes) = 0;
  // Frees what AllocateRaw returned for the same `bytes`; nullptr is ignored.
  virtual void DeallocateRaw(void* pointer, size_t bytes) = 0;
  virtual AllocatorStats GetStats() const = 0;
  virtual MemoryType memory_type() const = 0;
};

// The process's host allocator (AllocateAligned/FreeAligned with their counters); never null, never
// destroyed.
Allocator* HostAllocator();

// Whether tensors of `a` can be read as tensors of `b` without a copy: both in host memory, or the
// same allocator. A null allocator stands for host bytes owned elsewhere (a network message).
bool SameMemorySpace(const Allocator* a, const Allocator* b);

}  // namespace weft
