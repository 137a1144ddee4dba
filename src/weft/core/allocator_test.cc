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

}  // namespace
}  // namespace weft
