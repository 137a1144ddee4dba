// Tests of the Tile and BroadcastTo kernels: hand values, reference loops over random shapes and
// multiples (0 and 1 included) for every dtype, large threaded outputs, zero-copy when nothing
// repeats, and the errors.
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

// out[i] = x[i mod x.shape], x right-aligned against `out_dims` (broadcast and tile alike).
Tensor ReferenceRepeat(const Tensor& x, const std::vector<int64_t>& out_dims) {
  Tensor y(x.dtype(), TensorShape(out_dims));
  const int offset = static_cast<int>(out_dims.size()) - x.dims();
  for (int64_t o = 0; o < y.NumElements(); ++o) {
    std::vector<int64_t> out_index = Unravel(o, y.shape()), in_index(x.dims());
    for (int i = 0; i < x.dims(); ++i) in_index[i] = out_index[i + offset] % x.dim_size(i);
    CopyElement(x, Ravel(in_index, x.shape()), y, o);
  }
  return y;
}

void ExpectTileMatches(KernelRunner& runner, const Tensor& x, const std::vector<int64_t>& multiples,
                       DataType index_type = DataType::kInt32) {
  std::vector<int64_t> out_dims(multiples.size());
  for (size_t i = 0; i < multiples.size(); ++i) {
    out_dims[i] = x.dim_size(static_cast<int>(i)) * multiples[i];
  }
  StatusOr<Tensor> y = runner.RunOne("Tile", {x, IndexVector(index_type, multiples)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, ReferenceRepeat(x, out_dims))
      << "shape " << x.shape() << " multiples [" << StrJoin(multiples, ",") << "]";
}

void ExpectBroadcastMatches(KernelRunner& runner, const Tensor& x,
                            const std::vector<int64_t>& target,
                            DataType index_type = DataType::kInt32) {
  StatusOr<Tensor> y = runner.RunOne("BroadcastTo", {x, IndexVector(index_type, target)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, ReferenceRepeat(x, target))
      << "shape " << x.shape() << " to [" << StrJoin(target, ",") << "]";
}

TEST(TileOpTest, HandValues) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  StatusOr<Tensor> y = runner.RunOne("Tile", {x, IndexVector(DataType::kInt32, {2, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<float>(
                           {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4},
                           TensorShape({4, 6})));
  y = runner.RunOne("Tile", {x, IndexVector(DataType::kInt64, {1, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), TensorShape({2, 0}));
}

TEST(TileOpTest, RandomShapesMatchTheReference) {
  KernelRunner runner;
  std::mt19937 rng(17);
  const std::vector<TensorShape> shapes = {TensorShape({3}),       TensorShape({1}),
                                           TensorShape({2, 3}),    TensorShape({1, 4, 1}),
                                           TensorShape({2, 1, 3}), TensorShape({2, 2, 1, 3}),
                                           TensorShape({0, 2})};
  for (DataType dtype : AllTypes()) {
    for (const TensorShape& shape : shapes) {
      Tensor x = RandomTensor(dtype, shape, rng);
      for (int trial = 0; trial < 5; ++trial) {
        std::vector<int64_t> multiples(shape.dims());
        for (int64_t& m : multiples) m = static_cast<int64_t>(rng() % 4);  // 0 to 3
        ExpectTileMatches(runner, x, multiples, trial % 2 ? DataType::kInt64 : DataType::kInt32);
      }
    }
  }
}

TEST(TileOpTest, LargeOutputsUseThreadsAndMatch) {
  KernelRunner runner(4);
  std::mt19937 rng(18);
  ExpectTileMatches(runner, RandomTensor(DataType::kFloat, TensorShape({7}), rng), {6000});
  ExpectTileMatches(runner, RandomTensor(DataType::kInt64, TensorShape({1}), rng), {40000});
  ExpectTileMatches(runner, RandomTensor(DataType::kUInt8, TensorShape({30, 20}), rng), {5, 20});
  ExpectTileMatches(runner, RandomTensor(DataType::kDouble, TensorShape({2, 3, 4}), rng),
                    {40, 2, 30});
}

TEST(TileOpTest, NothingRepeatedSharesTheBuffer) {
  KernelRunner runner;
  std::mt19937 rng(19);
  Tensor x = RandomTensor(DataType::kInt32, TensorShape({2, 3}), rng);
  StatusOr<Tensor> y = runner.RunOne("Tile", {x, IndexVector(DataType::kInt32, {1, 1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, x);
  EXPECT_TRUE(y->SharesBufferWith(x));
  Tensor scalar = Tensor::Scalar<float>(3);
  y = runner.RunOne("Tile", {scalar, IndexVector(DataType::kInt32, {})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, scalar);
}

TEST(TileOpTest, Errors) {
  KernelRunner runner;
  Tensor x(DataType::kFloat, TensorShape({2, 3}));
  const std::vector<std::pair<std::vector<int64_t>, std::string>> cases = {
      {{2}, "entr"}, {{1, -1}, "negative"}, {{1, 1, 1}, "entr"}};
  for (const auto& [multiples, fragment] : cases) {
    Tensor m = IndexVector(DataType::kInt32, multiples);
    EXPECT_TRUE(IsNodeError(runner.RunOne("Tile", {x, m}).status(), "test_Tile", fragment));
    EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "Tile", {x, m}).status(), "test_Tile",
                            fragment));
  }
  Tensor huge = IndexVector(DataType::kInt64, {int64_t{1} << 62, 4});
  EXPECT_TRUE(IsNodeError(runner.RunOne("Tile", {x, huge}).status(), "test_Tile", "overflows"));
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "Tile", {x, huge}).status(), "test_Tile",
                          "overflows"));
}

TEST(BroadcastToOpTest, HandValues) {
  KernelRunner runner;
  Tensor row = Tensor::FromVector<int32_t>({1, 2, 3});
  StatusOr<Tensor> y = runner.RunOne("BroadcastTo", {row, IndexVector(DataType::kInt32, {2, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<int32_t>({1, 2, 3, 1, 2, 3}, TensorShape({2, 3})));
  Tensor column = Tensor::FromVector<int32_t>({1, 2}, TensorShape({2, 1}));
  y = runner.RunOne("BroadcastTo", {column, IndexVector(DataType::kInt64, {2, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<int32_t>({1, 1, 1, 2, 2, 2}, TensorShape({2, 3})));
  y = runner.RunOne("BroadcastTo",
                    {Tensor::Scalar<int32_t>(9), IndexVector(DataType::kInt32, {2, 2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<int32_t>({9, 9, 9, 9}, TensorShape({2, 2})));
}

TEST(BroadcastToOpTest, RandomShapesMatchTheReference) {
  KernelRunner runner;
  std::mt19937 rng(20);
  const std::vector<std::pair<TensorShape, std::vector<int64_t>>> cases = {
      {TensorShape(), {4}},
      {TensorShape({1}), {3, 5}},
      {TensorShape({5}), {2, 3, 5}},
      {TensorShape({3, 1}), {3, 4}},
      {TensorShape({1, 4, 1}), {2, 4, 3}},
      {TensorShape({2, 1, 3, 1}), {2, 5, 3, 2}},
      {TensorShape({1, 3}), {0, 3}},
      {TensorShape({3, 1}), {2, 3, 1}}};
  for (DataType dtype : AllTypes()) {
    for (const auto& [shape, target] : cases) {
      ExpectBroadcastMatches(runner, RandomTensor(dtype, shape, rng), target,
                             dtype == DataType::kInt32 ? DataType::kInt64 : DataType::kInt32);
    }
  }
  KernelRunner threaded(4);
  ExpectBroadcastMatches(threaded, RandomTensor(DataType::kFloat, TensorShape({300, 1}), rng),
                         {300, 200});
  ExpectBroadcastMatches(threaded, RandomTensor(DataType::kFloat, TensorShape({1, 300}), rng),
                         {200, 300});
}

TEST(BroadcastToOpTest, SameElementCountSharesTheBuffer) {
  KernelRunner runner;
  std::mt19937 rng(21);
  Tensor x = RandomTensor(DataType::kDouble, TensorShape({2, 3}), rng);
  StatusOr<Tensor> y = runner.RunOne("BroadcastTo", {x, IndexVector(DataType::kInt32, {1, 2, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, x.Reshaped(TensorShape({1, 2, 3})));
  EXPECT_TRUE(y->SharesBufferWith(x));
}

TEST(BroadcastToOpTest, Errors) {
  KernelRunner runner;
  Tensor x(DataType::kFloat, TensorShape({2, 3}));
  const std::vector<std::pair<std::vector<int64_t>, std::string>> cases = {
      {{2, 4}, "cannot broadcast"},
      {{3}, "cannot broadcast"},
      {{4, 3}, "cannot broadcast"},
      {{2, -3}, "[2,-3]"}};
  for (const auto& [target, fragment] : cases) {
    Tensor shape = IndexVector(DataType::kInt32, target);
    EXPECT_TRUE(IsNodeError(runner.RunOne("BroadcastTo", {x, shape}).status(), "test_BroadcastTo",
                            fragment));
    EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "BroadcastTo", {x, shape}).status(),
                            "test_BroadcastTo", fragment));
  }
}

}  // namespace
}  // namespace weft::kernels::array
