#include "weft/core/tensor.h"

#include <chrono>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include "weft/core/allocator.h"

namespace weft {
namespace {

TEST(TensorShapeTest, CountsElementsAndPrints) {
  TensorShape shape({2, 3, 4});
  EXPECT_EQ(shape.dims(), 3);
  EXPECT_EQ(shape.num_elements(), 24);
  EXPECT_EQ(shape.DebugString(), "[2,3,4]");
  EXPECT_EQ(TensorShape().num_elements(), 1);
  EXPECT_EQ(TensorShape().DebugString(), "[]");
}

TEST(TensorShapeTest, CreateRejectsNegativeAndOverflowingDimensions) {
  std::vector<int64_t> negative = {2, -1};
  EXPECT_TRUE(IsInvalidArgument(TensorShape::Create(negative).status()));
  std::vector<int64_t> huge = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_TRUE(IsInvalidArgument(TensorShape::Create(huge).status()));
  std::vector<int64_t> fine = {3, 0, 5};
  ASSERT_TRUE(TensorShape::Create(fine).ok());
  EXPECT_EQ(TensorShape::Create(fine)->num_elements(), 0);
}

TEST(TensorTest, BufferIs64ByteAligned) {
  for (int n : {1, 3, 17, 1000}) {
    Tensor t(DataType::kFloat, TensorShape({n}));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  }
}

// Found while fixing a fuzz finding (fuzz/tensor_proto_fuzzer): 2^61 doubles are 2^64 bytes,
// which wrapped around to a 0-byte buffer behind a tensor of 2^61 elements.
TEST(TensorTest, AllocateRefusesAShapeWhoseBytesOverflow) {
  StatusOr<Tensor> t = Tensor::Allocate(DataType::kDouble, TensorShape({int64_t{1} << 61}));
  EXPECT_TRUE(IsResourceExhausted(t.status())) << t.status();
  EXPECT_NE(t.status().message().find("[2305843009213693952]"), std::string::npos) << t.status();
}

TEST(TensorTest, CopiesShareTheBufferWithoutCopying) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  Tensor b = a;
  EXPECT_TRUE(a.SharesBufferWith(b));
  EXPECT_FALSE(a.RefCountIsOne());
  b.data<float>()[0] = 42;
  EXPECT_EQ(a.data<float>()[0], 42);
  Tensor c = a.DeepCopy();
  EXPECT_FALSE(c.SharesBufferWith(a));
  c.data<float>()[1] = 7;
  EXPECT_EQ(a.data<float>()[1], 2);
}

TEST(TensorTest, BufferIsFreedWithTheLastReference) {
  int64_t before = GetAllocatorStats().bytes_in_use;
  {
    Tensor a(DataType::kDouble, TensorShape({1000}));
    Tensor b = a.Reshaped(TensorShape({10, 100}));
    EXPECT_EQ(GetAllocatorStats().bytes_in_use, before + 8000);
  }
  EXPECT_EQ(GetAllocatorStats().bytes_in_use, before);
}

TEST(TensorTest, RefCountFollowsCopiesMovesAndAssignments) {
  Tensor a = Tensor::FromVector<float>({1, 2});
  EXPECT_TRUE(a.RefCountIsOne());
  Tensor b = a;
  EXPECT_FALSE(a.RefCountIsOne());
  Tensor c = std::move(b);  // a move adds no owner
  EXPECT_FALSE(a.RefCountIsOne());
  c = Tensor::FromVector<float>({3});  // assignment drops c's share of a's buffer
  EXPECT_TRUE(a.RefCountIsOne());
  EXPECT_TRUE(c.RefCountIsOne());
  Tensor& self = a;
  a = self;  // self-assignment keeps the one reference
  EXPECT_TRUE(a.RefCountIsOne());
  EXPECT_EQ(a.data<float>()[1], 2);
  EXPECT_FALSE(Tensor().RefCountIsOne());
}

// Copy-on-write across threads (what a variable update does): each thread copies the shared
// buffer, drops its share and, once it sees itself the only owner, writes in place. The writes must
// come after the other thread's reads; ThreadSanitizer checks that the count orders them.
TEST(TensorTest, SoleOwnerWritesAfterTheOtherOwnersReads) {
  for (int round = 0; round < 50; ++round) {
    Tensor shared = Tensor::FromVector<float>({1, 2, 3, 4});
    Tensor first = shared;
    Tensor second = std::move(shared);
    float sum = 0;
    std::thread reader([&first, &sum] {
      for (float value : first.flat<float>()) sum += value;
      first = Tensor();
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!second.RefCountIsOne() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    if (second.RefCountIsOne()) second.data<float>()[0] = 10;
    reader.join();
    EXPECT_EQ(sum, 10);
  }
}

TEST(TensorTest, SliceViewsRowsOfDimensionZero) {
  Tensor a = Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5}, TensorShape({3, 2}));
  Tensor rows = a.Slice(1, 3);
  EXPECT_EQ(rows.shape(), TensorShape({2, 2}));
  EXPECT_EQ(rows.data<int32_t>()[0], 2);
  EXPECT_EQ(rows.data<int32_t>()[3], 5);
  EXPECT_TRUE(rows.SharesBufferWith(a));
}

TEST(TensorTest, DebugStringShowsTypeShapeAndValues) {
  Tensor t = Tensor::FromVector<float>({1, 2.5f});
  EXPECT_EQ(t.DebugString(), "Tensor<float32, [2]: 1 2.5>");
  EXPECT_EQ(Tensor::Scalar<bool>(true).DebugString(), "Tensor<bool, []: 1>");
  EXPECT_EQ(Tensor().DebugString(), "Tensor<uninitialized>");
}

TEST(DataTypeTest, NamesRoundTrip) {
  for (DataType t : {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kUInt8,
                     DataType::kInt64, DataType::kBool}) {
    EXPECT_EQ(DataTypeFromName(DataTypeName(t)), t);
  }
  EXPECT_EQ(DataTypeFromName("float"), DataType::kFloat);
  EXPECT_EQ(DataTypeFromName("complex"), DataType::kInvalid);
  EXPECT_EQ(DataTypeSize(DataType::kInt64), 8u);
}

}  // namespace
}  // namespace weft
