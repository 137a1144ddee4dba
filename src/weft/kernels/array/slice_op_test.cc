// Tests of the Slice kernel: hand values, a reference loop over random blocks (size -1 too) for
// every dtype, large threaded copies, zero-copy for aligned contiguous blocks, and the errors.
#include <cstdint>

#include <gtest/gtest.h>

#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::AllTypes;
using testing::CopyElement;
using testing::IndexVector;
using testing::IsNodeError;
using testing::RandomTensor;
using testing::Ravel;
using testing::RunKernelOnly;
using testing::Unravel;
using weft::testing::KernelRunner;

Tensor ReferenceSlice(const Tensor& x, const std::vector<int64_t>& begin,
                      const std::vector<int64_t>& size) {
  std::vector<int64_t> dims(size.size());
  for (size_t i = 0; i < size.size(); ++i) {
    dims[i] = size[i] == -1 ? x.dim_size(static_cast<int>(i)) - begin[i] : size[i];
  }
  Tensor y(x.dtype(), TensorShape(dims));
  for (int64_t o = 0; o < y.NumElements(); ++o) {
    std::vector<int64_t> index = Unravel(o, y.shape());
    for (size_t i = 0; i < index.size(); ++i) index[i] += begin[i];
    CopyElement(x, Ravel(index, x.shape()), y, o);
  }
  return y;
}

Tensor ExpectMatchesReference(KernelRunner& runner, const Tensor& x,
                              const std::vector<int64_t>& begin, const std::vector<int64_t>& size,
                              DataType index_type = DataType::kInt32) {
  StatusOr<Tensor> y =
      runner.RunOne("Slice", {x, IndexVector(index_type, begin), IndexVector(index_type, size)});
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return Tensor();
  EXPECT_TENSOR_EQ(*y, ReferenceSlice(x, begin, size))
      << "shape " << x.shape() << " begin [" << StrJoin(begin, ",") << "] size ["
      << StrJoin(size, ",") << "]";
  return *y;
}

TEST(SliceOpTest, HandValues) {
  KernelRunner runner;
  Tensor x =
      Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, TensorShape({3, 4}));
  StatusOr<Tensor> y = runner.RunOne(
      "Slice", {x, IndexVector(DataType::kInt32, {1, 1}), IndexVector(DataType::kInt32, {2, 2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<int32_t>({5, 6, 9, 10}, TensorShape({2, 2})));
  y = runner.RunOne(
      "Slice", {x, IndexVector(DataType::kInt64, {0, 2}), IndexVector(DataType::kInt64, {-1, -1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<int32_t>({2, 3, 6, 7, 10, 11}, TensorShape({3, 2})));
}

TEST(SliceOpTest, RandomBlocksMatchTheReference) {
  KernelRunner runner;
  std::mt19937 rng(14);
  const std::vector<TensorShape> shapes = {TensorShape({9}), TensorShape({4, 5}),
                                           TensorShape({3, 4, 5}), TensorShape({2, 3, 1, 4}),
                                           TensorShape({3, 0, 2})};
  for (DataType dtype : AllTypes()) {
    for (const TensorShape& shape : shapes) {
      Tensor x = RandomTensor(dtype, shape, rng);
      for (int trial = 0; trial < 6; ++trial) {
        std::vector<int64_t> begin(shape.dims()), size(shape.dims());
        for (int i = 0; i < shape.dims(); ++i) {
          const int64_t dim = shape.dim_size(i);
          begin[i] = static_cast<int64_t>(rng() % (dim + 1));
          size[i] = rng() % 4 == 0 ? -1 : static_cast<int64_t>(rng() % (dim - begin[i] + 1));
        }
        ExpectMatchesReference(runner, x, begin, size,
                               trial % 2 ? DataType::kInt64 : DataType::kInt32);
      }
    }
  }
}

TEST(SliceOpTest, LargeSlicesUseThreadsAndMatch) {
  KernelRunner runner(4);
  std::mt19937 rng(15);
  ExpectMatchesReference(runner, RandomTensor(DataType::kFloat, TensorShape({400, 300}), rng),
                         {13, 7}, {350, 250});
  ExpectMatchesReference(runner, RandomTensor(DataType::kUInt8, TensorShape({64, 64, 32}), rng),
                         {1, 2, 3}, {60, 50, 1});
  ExpectMatchesReference(runner, RandomTensor(DataType::kInt64, TensorShape({3, 50000}), rng),
                         {1, 5}, {2, -1});
}

TEST(SliceOpTest, AlignedContiguousBlocksShareTheBuffer) {
  KernelRunner runner;
  std::mt19937 rng(16);
  Tensor x = RandomTensor(DataType::kFloat, TensorShape({64, 16}), rng);
  // Rows 4..11: starts 256 bytes in, aligned.
  Tensor rows = ExpectMatchesReference(runner, x, {4, 0}, {8, -1});
  EXPECT_TRUE(rows.SharesBufferWith(x));
  // Row 1 starts 64 bytes in: aligned too, and [1, 16] is contiguous.
  Tensor row = ExpectMatchesReference(runner, x, {1, 0}, {1, 16});
  EXPECT_TRUE(row.SharesBufferWith(x));
  // Row 1, columns 1..: contiguous but unaligned, so copied.
  Tensor unaligned = ExpectMatchesReference(runner, x, {1, 1}, {1, 15});
  EXPECT_FALSE(unaligned.SharesBufferWith(x));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(unaligned.raw_data()) % 64, 0u);
  // Columns: not contiguous.
  EXPECT_FALSE(ExpectMatchesReference(runner, x, {0, 0}, {64, 8}).SharesBufferWith(x));
  // The whole tensor.
  EXPECT_TRUE(ExpectMatchesReference(runner, x, {0, 0}, {-1, -1}).SharesBufferWith(x));
}

TEST(SliceOpTest, Errors) {
  KernelRunner runner;
  Tensor x(DataType::kDouble, TensorShape({3, 4}));
  const std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::string>> cases = {
      {{4, 0}, {-1, -1}, "out of bounds"},
      {{-1, 0}, {1, 1}, "out of bounds"},
      {{1, 1}, {3, 1}, "out of bounds"},
      {{0, 0}, {1, -2}, "out of bounds"},
      {{0, 0, 0}, {1, 1, 1}, "entries"}};
  for (const auto& [begin, size, fragment] : cases) {
    std::vector<Tensor> inputs = {x, IndexVector(DataType::kInt32, begin),
                                  IndexVector(DataType::kInt32, size)};
    EXPECT_TRUE(IsNodeError(runner.RunOne("Slice", inputs).status(), "test_Slice", fragment));
    const std::string kernel_fragment = fragment == "entries" ? "one entry per" : fragment;
    EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "Slice", inputs).status(), "test_Slice",
                            kernel_fragment));
  }
  EXPECT_TRUE(IsNodeError(
      runner
          .RunOne("Slice", {x, IndexVector(DataType::kInt32, {0, 0}),
                            IndexVector(DataType::kInt32, {0, 0}).Reshaped(TensorShape({1, 2}))})
          .status(),
      "test_Slice", "rank 1"));
}

}  // namespace
}  // namespace weft::kernels::array
