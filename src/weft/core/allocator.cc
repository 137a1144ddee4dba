#include "weft/core/allocator.h"

#include <atomic>
#include <cstdlib>
#include <deque>

#include "weft/core/mutex.h"

namespace weft {
namespace {

std::atomic<int64_t> bytes_in_use{0};
std::atomic<int64_t> peak_bytes_in_use{0};
std::atomic<int64_t> allocation_count{0};

// Freed large blocks by rounded size, oldest first; evicted oldest first past kMaxCachedBytes.
class LargeBlockCache {
 public:
  void* Take(size_t rounded) {
    MutexLock lock(mu_);
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
      if (it->size != rounded) continue;
      void* pointer = it->pointer;
      cached_bytes_ -= rounded;
      blocks_.erase(it);
      return pointer;
    }
    return nullptr;
  }
  // Returns false when the block does not fit (the caller frees it).
  bool Put(void* pointer, size_t rounded) {
    if (rounded > kMaxCachedBytes) return false;
    std::deque<Block> evicted;
    {
      MutexLock lock(mu_);
      while (cached_bytes_ + rounded > kMaxCachedBytes) {
        evicted.push_back(blocks_.front());
        cached_bytes_ -= blocks_.front().size;
        blocks_.pop_front();
      }
      blocks_.push_back({pointer, rounded});
      cached_bytes_ += rounded;
    }
    for (const Block& block : evicted) std::free(block.pointer);
    return true;
  }
  void Release() {
    std::deque<Block> released;
    {
      MutexLock lock(mu_);
      released.swap(blocks_);
      cached_bytes_ = 0;
    }
    for (const Block& block : released) std::free(block.pointer);
  }
  int64_t cached_bytes() {
    MutexLock lock(mu_);
    return static_cast<int64_t>(cached_bytes_);
  }

 private:
  struct Block {
    void* pointer;
    size_t size;
  };
  Mutex mu_;
  std::deque<Block> blocks_ WEFT_GUARDED_BY(mu_);
  size_t cached_bytes_ WEFT_GUARDED_BY(mu_) = 0;
};

// Never destroyed: tensors may be freed during static destruction.
LargeBlockCache& Cache() {
  static LargeBlockCache* const cache = new LargeBlockCache();
  return *cache;
}

// Blocks from this size up are kept when freed. glibc serves them from memory that it gives back
// to the kernel when they are freed (its own mmap, or a trimmed heap), and every fresh page then
// faults on first touch, which costs 5-8 us a page on the virtual machines we measure on: a Cast
// writing 2 MB took 4 ms instead of 0.15 ms, and 60 steps of W6 (whose activations are 2-16 MB)
// took 350k page faults instead of 110k and ran 10-15% slower.
constexpr size_t kCachedBlockBytes = size_t{256} << 10;

size_t RoundedSize(size_t bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment, and a non-zero one. Cached
  // blocks round up (to 64 KB, or whole megabytes from kLargeBlockBytes) so that near sizes
  // share them.
  size_t granule = bytes >= kLargeBlockBytes    ? size_t{1} << 20
                   : bytes >= kCachedBlockBytes ? size_t{64} << 10
                                                : kTensorAlignment;
  size_t rounded = (bytes + granule - 1) / granule * granule;
  return rounded == 0 ? kTensorAlignment : rounded;
}

void RaisePeak(int64_t now) {
  int64_t peak = peak_bytes_in_use.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_bytes_in_use.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace

void* AllocateAligned(size_t bytes) {
  const size_t rounded = RoundedSize(bytes);
  void* pointer = rounded >= kCachedBlockBytes ? Cache().Take(rounded) : nullptr;
  if (pointer == nullptr) pointer = std::aligned_alloc(kTensorAlignment, rounded);
  if (pointer == nullptr) return nullptr;
  allocation_count.fetch_add(1, std::memory_order_relaxed);
  RaisePeak(bytes_in_use.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed) +
            static_cast<int64_t>(bytes));
  return pointer;
}

void FreeAligned(void* pointer, size_t bytes) {
  if (pointer == nullptr) return;
  bytes_in_use.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  const size_t rounded = RoundedSize(bytes);
  if (rounded >= kCachedBlockBytes && Cache().Put(pointer, rounded)) return;
  std::free(pointer);
}

void ReleaseCachedMemory() { Cache().Release(); }

AllocatorStats GetAllocatorStats() {
  return AllocatorStats{bytes_in_use.load(), peak_bytes_in_use.load(), allocation_count.load(),
                        Cache().cached_bytes()};
}

void ResetPeakBytesInUse() { peak_bytes_in_use.store(bytes_in_use.load()); }

namespace {

class AlignedHostAllocator final : public Allocator {
 public:
  std::string Name() const override { return "host"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    // AllocateAligned aligns every block to kTensorAlignment, which serves any smaller power of
    // two.
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kTensorAlignment) {
      return nullptr;
    }
    return AllocateAligned(bytes);
  }
  void DeallocateRaw(void* pointer, size_t bytes) override { FreeAligned(pointer, bytes); }
  AllocatorStats GetStats() const override { return GetAllocatorStats(); }
  MemoryType memory_type() const override { return MemoryType::kHost; }
};

}  // namespace

Allocator* HostAllocator() {
  // Never destroyed: tensors may be freed during static destruction.
  static Allocator* const allocator = new AlignedHostAllocator();
  return allocator;
}

bool SameMemorySpace(const Allocator* a, const Allocator* b) {
  if (a == b) return true;
  const bool a_host = a == nullptr || a->memory_type() == MemoryType::kHost;
  const bool b_host = b == nullptr || b->memory_type() == MemoryType::kHost;
  return a_host && b_host;
}

}  // namespace weft
