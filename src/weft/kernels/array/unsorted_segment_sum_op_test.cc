// Tests of the UnsortedSegmentSum kernel: hand values (negative ids dropped, empty segments zero),
// a reference loop over random shapes, id ranks and dtypes, sizes that run on the thread pool, and
// the errors: ids out of range (named with their position, value and bound), bad num_segments and
// ids that are not a prefix of data.
#include <algorithm>
#include <random>
#include <type_traits>

#include <gtest/gtest.h>

#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::IndexScalar;
using testing::IndexVector;
using testing::IsNodeError;
using testing::RandomTensor;
using testing::RunKernelOnly;
using weft::testing::KernelRunner;

// out[s, b...] = sum of data[i..., b...] over the i with ids[i...] == s, in order; ids are the
// flattened segment_ids, covering the leading dims of data.
template <typename T>
Tensor ReferenceSegmentSum(const Tensor& data, const std::vector<int64_t>& ids, int ids_rank,
                           int64_t segments) {
  std::vector<int64_t> dims = {segments};
  int64_t inner = 1;
  for (int i = ids_rank; i < data.dims(); ++i) {
    dims.push_back(data.dim_size(i));
    inner *= data.dim_size(i);
  }
  Tensor out(data.dtype(), TensorShape(dims));
  T* o = out.data<T>();
  std::fill(o, o + out.NumElements(), T(0));
  for (size_t r = 0; r < ids.size(); ++r) {
    if (ids[r] < 0) continue;
    for (int64_t c = 0; c < inner; ++c) o[ids[r] * inner + c] += data.data<T>()[r * inner + c];
  }
  return out;
}

TEST(UnsortedSegmentSumOpTest, HandValues) {
  KernelRunner runner;
  Tensor data = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, TensorShape({4, 2}));
  StatusOr<Tensor> out = runner.RunOne(
      "UnsortedSegmentSum",
      {data, IndexVector(DataType::kInt32, {0, 2, 0, -1}), IndexScalar(DataType::kInt32, 3)});
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 3 has id -1 and is dropped; segment 1 receives nothing.
  EXPECT_TENSOR_EQ(*out, Tensor::FromVector<float>({6, 8, 0, 0, 3, 4}, TensorShape({3, 2})));
  // Ids of rank 2 over data [2,2]: scalar slices.
  StatusOr<Tensor> scalars =
      runner.RunOne("UnsortedSegmentSum",
                    {Tensor::FromVector<int64_t>({1, 2, 3, 4}, TensorShape({2, 2})),
                     IndexVector(DataType::kInt64, {1, 1, 0, 1}).Reshaped(TensorShape({2, 2})),
                     IndexScalar(DataType::kInt64, 2)});
  ASSERT_TRUE(scalars.ok()) << scalars.status();
  EXPECT_TENSOR_EQ(*scalars, Tensor::FromVector<int64_t>({3, 7}));
}

template <typename T>
void CheckAgainstReference(KernelRunner& runner, const TensorShape& shape, int ids_rank,
                           int64_t segments, std::mt19937& rng) {
  Tensor data = RandomTensor(DataTypeToEnum<T>::value, shape, rng);
  if constexpr (std::is_integral_v<T>) {  // small values: no overflow in the sums
    for (T& v : data.flat<T>()) v = static_cast<T>(v % 1000);
  }
  int64_t rows = 1;
  std::vector<int64_t> ids_dims;
  for (int i = 0; i < ids_rank; ++i) {
    rows *= shape.dim_size(i);
    ids_dims.push_back(shape.dim_size(i));
  }
  std::uniform_int_distribution<int64_t> pick(-1, segments - 1);
  std::vector<int64_t> ids(static_cast<size_t>(rows));
  for (int64_t& id : ids) id = pick(rng);
  const DataType id_type = rows % 2 ? DataType::kInt64 : DataType::kInt32;
  StatusOr<Tensor> out =
      runner.RunOne("UnsortedSegmentSum",
                    {data, IndexVector(id_type, ids).Reshaped(TensorShape(ids_dims)),
                     IndexScalar(segments % 2 ? DataType::kInt64 : DataType::kInt32, segments)});
  ASSERT_TRUE(out.ok()) << out.status();
  Tensor expected = ReferenceSegmentSum<T>(data, ids, ids_rank, segments);
  if constexpr (std::is_floating_point_v<T>) {
    EXPECT_TENSOR_NEAR(*out, expected, 1e-4, 1e-5) << shape << " ids rank " << ids_rank;
  } else {
    EXPECT_TENSOR_EQ(*out, expected) << shape << " ids rank " << ids_rank;
  }
}

TEST(UnsortedSegmentSumOpTest, MatchesReference) {
  KernelRunner runner(4);
  std::mt19937 rng(3);
  struct Case {
    TensorShape shape;
    int ids_rank;
    int64_t segments;
  };
  const Case cases[] = {
      {{6}, 1, 4},
      {{6, 3}, 1, 2},
      {{4, 3, 2}, 2, 5},
      {{5, 0}, 1, 3},
      {{0, 4}, 1, 3},
      {{3, 2}, 1, 1},
      {{3, 2}, 1, 0},
      {{2, 2, 2}, 3, 3},
      {{1000, 100}, 1, 37},
      {{200000}, 1, 1000},
      {{64, 2048}, 1, 8},
      // Narrow rows into far more segments than rows (a gather's gradient: one thread, one fill),
      // and rows just wide enough to be split by columns.
      {{512, 16}, 1, 300000},
      {{40000}, 1, 90000},
      {{300, 256}, 1, 50},
  };
  for (const Case& c : cases) {
    CheckAgainstReference<float>(runner, c.shape, c.ids_rank, c.segments, rng);
    CheckAgainstReference<double>(runner, c.shape, c.ids_rank, c.segments, rng);
    CheckAgainstReference<int32_t>(runner, c.shape, c.ids_rank, c.segments, rng);
    CheckAgainstReference<int64_t>(runner, c.shape, c.ids_rank, c.segments, rng);
  }
}

TEST(UnsortedSegmentSumOpTest, ErrorsNameTheProblem) {
  KernelRunner runner;
  Tensor data = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor ids = IndexVector(DataType::kInt32, {0, 3, 1});
  Tensor three = IndexScalar(DataType::kInt32, 3);
  EXPECT_TRUE(IsNodeError(runner.RunOne("UnsortedSegmentSum", {data, ids, three}).status(),
                          "test_UnsortedSegmentSum", "segment_ids[1] = 3 is out of range [0, 3)"));
  EXPECT_TRUE(IsNodeError(
      runner.RunOne("UnsortedSegmentSum", {data, IndexVector(DataType::kInt32, {0, 1}), three})
          .status(),
      "test_UnsortedSegmentSum", "segment_ids shape [2] must be a prefix of data shape [3,2]"));
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "UnsortedSegmentSum",
                                        {data, IndexVector(DataType::kInt32, {0, 1, 2, 0}), three})
                              .status(),
                          "test_UnsortedSegmentSum", "must be a prefix of data shape [3,2]"));
  Tensor ok_ids = IndexVector(DataType::kInt32, {0, 1, 2});
  EXPECT_TRUE(IsNodeError(
      runner.RunOne("UnsortedSegmentSum", {data, ok_ids, IndexScalar(DataType::kInt32, -1)})
          .status(),
      "test_UnsortedSegmentSum", "num_segments must be non-negative, but is -1"));
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "UnsortedSegmentSum",
                                        {data, ok_ids, IndexScalar(DataType::kInt64, -2)})
                              .status(),
                          "test_UnsortedSegmentSum",
                          "num_segments must be non-negative, but is -2"));
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "UnsortedSegmentSum",
                                        {data, ok_ids, IndexVector(DataType::kInt32, {3})})
                              .status(),
                          "test_UnsortedSegmentSum", "num_segments must be a scalar"));
  EXPECT_FALSE(runner
                   .RunOne("UnsortedSegmentSum", {Tensor::FromVector<bool>({true}),
                                                  IndexVector(DataType::kInt32, {0}), three})
                   .ok());
}

}  // namespace
}  // namespace weft::kernels::array
