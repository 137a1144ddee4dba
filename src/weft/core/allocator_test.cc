#include "weft/core/allocator.h"

#include <vector>

#include <gtest/gtest.h>

#include "weft/core/tensor.h"

namespace weft {
namespace {

TEST(AllocatorTest, LargeBlocksAreReusedAfterTheyAreFreed) {
  ReleaseCachedMemory();
  const TensorShape shape({2, 1 << 20});  // 8 MB of float32
  const void* first = nullptr;
  {
    Tensor t(DataType::kFloat, shape);
    first = t.data<float>();
  }
  EXPECT_GE(GetAllocatorStats().cached_bytes, int64_t{8} << 20);
  {
    Tensor again(DataType::kFloat, shape);
    EXPECT_EQ(again.data<float>(), first);  // the cached block, no fresh pages
    EXPECT_EQ(GetAllocatorStats().cached_bytes, 0);
    Tensor other(DataType::kFloat, shape);  // nothing cached left: a new block
    EXPECT_NE(other.data<float>(), first);
  }
  ReleaseCachedMemory();
  EXPECT_EQ(GetAllocatorStats().cached_bytes, 0);
}

// Activation-sized blocks (2 MB) are kept too, and a near size shares the rounded block.
TEST(AllocatorTest, MegabyteBlocksAreReusedAfterTheyAreFreed) {
  ReleaseCachedMemory();
  const void* first = nullptr;
  {
    Tensor t(DataType::kFloat, TensorShape({512 << 10}));  // 2 MB
    first = t.data<float>();
  }
  EXPECT_GE(GetAllocatorStats().cached_bytes, int64_t{2} << 20);
  {
    Tensor near(DataType::kFloat, TensorShape({(512 << 10) - 100}));
    EXPECT_EQ(near.data<float>(), first);
  }
  ReleaseCachedMemory();
}

TEST(AllocatorTest, SmallBlocksAreNotCachedAndTheCacheIsBounded) {
  ReleaseCachedMemory();
  { Tensor small(DataType::kFloat, TensorShape({1000})); }
  EXPECT_EQ(GetAllocatorStats().cached_bytes, 0);
  {
    std::vector<Tensor> blocks;
    for (int i = 0; i < 5; ++i) blocks.emplace_back(DataType::kFloat, TensorShape({20 << 20}));
  }  // 5 x 80 MB freed: at most kMaxCachedBytes stay
  EXPECT_LE(GetAllocatorStats().cached_bytes, static_cast<int64_t>(kMaxCachedBytes));
  EXPECT_GT(GetAllocatorStats().cached_bytes, 0);
  ReleaseCachedMemory();
}

// Device-like memory for the tests: counts what it hands out, or refuses everything.
class CountingAllocator final : public Allocator {
 public:
  explicit CountingAllocator(bool refuse = false) : refuse_(refuse) {}
  std::string Name() const override { return refuse_ ? "empty" : "counting"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (refuse_) return nullptr;
    ++allocations;
    in_use += static_cast<int64_t>(bytes);
    return HostAllocator()->AllocateRaw(alignment, bytes);
  }
  void DeallocateRaw(void* pointer, size_t bytes) override {
    in_use -= static_cast<int64_t>(bytes);
    HostAllocator()->DeallocateRaw(pointer, bytes);
  }
  AllocatorStats GetStats() const override { return {in_use, in_use, allocations, 0}; }
  MemoryType memory_type() const override { return MemoryType::kDevice; }

  int64_t allocations = 0;
  int64_t in_use = 0;

 private:
  const bool refuse_;
};

TEST(AllocatorTest, TensorsRememberTheirAllocatorAndReturnTheBytesToIt) {
  CountingAllocator device;
  {
    auto t = Tensor::Allocate(&device, DataType::kFloat, TensorShape({10}));
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->allocator(), &device);
    EXPECT_FALSE(t->IsInHostMemory());
    EXPECT_EQ(device.allocations, 1);
    EXPECT_EQ(device.in_use, 40);
    Tensor view = t->Slice(2, 4);
    EXPECT_EQ(view.allocator(), &device);
  }
  EXPECT_EQ(device.in_use, 0);
  Tensor host(DataType::kFloat, TensorShape({3}));
  EXPECT_EQ(host.allocator(), HostAllocator());
  EXPECT_TRUE(host.IsInHostMemory());
  EXPECT_TRUE(Tensor().IsInHostMemory());
}

TEST(AllocatorTest, AnAllocatorOutOfMemoryIsAnErrorNamingIt) {
  CountingAllocator empty(/*refuse=*/true);
  auto t = Tensor::Allocate(&empty, DataType::kFloat, TensorShape({10}));
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(IsResourceExhausted(t.status())) << t.status();
  EXPECT_NE(t.status().message().find("empty"), std::string::npos) << t.status();
}

TEST(AllocatorTest, MemorySpacesAreHostOrOneAllocatorEach) {
  CountingAllocator a, b;
  EXPECT_TRUE(SameMemorySpace(HostAllocator(), nullptr));  // foreign host bytes are host memory
  EXPECT_TRUE(SameMemorySpace(&a, &a));
  EXPECT_FALSE(SameMemorySpace(&a, &b));
  EXPECT_FALSE(SameMemorySpace(&a, HostAllocator()));
  EXPECT_EQ(HostAllocator()->memory_type(), MemoryType::kHost);
  EXPECT_EQ(HostAllocator()->AllocateRaw(128, 16), nullptr);  // more than kTensorAlignment
  EXPECT_EQ(HostAllocator()->AllocateRaw(3, 16), nullptr);    // not a power of two
  const int64_t before = HostAllocator()->GetStats().bytes_in_use;
  void* p = HostAllocator()->AllocateRaw(16, 100);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kTensorAlignment, 0u);
  EXPECT_EQ(HostAllocator()->GetStats().bytes_in_use, before + 100);
  HostAllocator()->DeallocateRaw(p, 100);
  EXPECT_EQ(HostAllocator()->GetStats().bytes_in_use, before);
}

}  // namespace
}  // namespace weft
