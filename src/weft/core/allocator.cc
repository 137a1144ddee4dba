#include "weft/core/allocator.h"

#include <atomic>
#include <cstdlib>

namespace weft {
namespace {

std::atomic<int64_t> bytes_in_use{0};
std::atomic<int64_t> peak_bytes_in_use{0};
std::atomic<int64_t> allocation_count{0};

void RaisePeak(int64_t now) {
  int64_t peak = peak_bytes_in_use.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_bytes_in_use.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace

void* AllocateAligned(size_t bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment, and a non-zero one.
  size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded == 0) rounded = kTensorAlignment;
  void* pointer = std::aligned_alloc(kTensorAlignment, rounded);
  if (pointer == nullptr) return nullptr;
  allocation_count.fetch_add(1, std::memory_order_relaxed);
  RaisePeak(bytes_in_use.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed) +
            static_cast<int64_t>(bytes));
  return pointer;
}

void FreeAligned(void* pointer, size_t bytes) {
  if (pointer == nullptr) return;
  bytes_in_use.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  std::free(pointer);
}

AllocatorStats GetAllocatorStats() {
  return AllocatorStats{bytes_in_use.load(), peak_bytes_in_use.load(), allocation_count.load()};
}

void ResetPeakBytesInUse() { peak_bytes_in_use.store(bytes_in_use.load()); }

}  // namespace weft
