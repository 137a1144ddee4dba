// Tests of the Transpose kernel against hand values and a reference loop: random permutations of
// ranks 3-4 for every dtype, the tiled 2-D and batched paths, Eigen shuffles, the strided path for
// rank 7, large (threaded) cases, zero-copy when the elements keep their order, and the errors.
#include <algorithm>
#include <numeric>

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

// y[i_0, ..., i_n] = x[j] where j[perm[k]] = i_k.
Tensor ReferenceTranspose(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> out_dims;
  for (int64_t p : perm) out_dims.push_back(x.dim_size(static_cast<int>(p)));
  Tensor y(x.dtype(), TensorShape(out_dims));
  for (int64_t o = 0; o < y.NumElements(); ++o) {
    std::vector<int64_t> out_index = Unravel(o, y.shape()), in_index(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) in_index[perm[k]] = out_index[k];
    CopyElement(x, Ravel(in_index, x.shape()), y, o);
  }
  return y;
}

void ExpectMatchesReference(KernelRunner& runner, const Tensor& x, const std::vector<int64_t>& perm,
                            DataType perm_type) {
  StatusOr<Tensor> y = runner.RunOne("Transpose", {x, IndexVector(perm_type, perm)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, ReferenceTranspose(x, perm))
      << "shape " << x.shape() << " perm [" << StrJoin(perm, ",") << "]";
}

TEST(TransposeOpTest, HandValues) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  StatusOr<Tensor> y = runner.RunOne("Transpose", {x, IndexVector(DataType::kInt32, {1, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<float>({1, 4, 2, 5, 3, 6}, TensorShape({3, 2})));

  Tensor z = Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7}, TensorShape({2, 2, 2}));
  y = runner.RunOne("Transpose", {z, IndexVector(DataType::kInt64, {2, 0, 1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y,
                   Tensor::FromVector<int32_t>({0, 2, 4, 6, 1, 3, 5, 7}, TensorShape({2, 2, 2})));
}

TEST(TransposeOpTest, RandomPermutationsOfRank3And4MatchTheReference) {
  KernelRunner runner;
  std::mt19937 rng(7);
  const std::vector<TensorShape> shapes = {TensorShape({2, 3, 4}),    TensorShape({5, 1, 7}),
                                           TensorShape({3, 0, 2}),    TensorShape({2, 3, 4, 5}),
                                           TensorShape({1, 6, 1, 5}), TensorShape({4, 3, 2, 1})};
  for (DataType dtype : AllTypes()) {
    for (const TensorShape& shape : shapes) {
      Tensor x = RandomTensor(dtype, shape, rng);
      std::vector<int64_t> perm(shape.dims());
      for (int trial = 0; trial < 4; ++trial) {
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        ExpectMatchesReference(runner, x, perm, trial % 2 ? DataType::kInt64 : DataType::kInt32);
      }
    }
  }
}

TEST(TransposeOpTest, EveryPermutationOfRank4) {
  KernelRunner runner;
  std::mt19937 rng(8);
  Tensor x = RandomTensor(DataType::kDouble, TensorShape({2, 3, 4, 5}), rng);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    ExpectMatchesReference(runner, x, perm, DataType::kInt32);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(TransposeOpTest, LargeTensorsUseThreadsAndMatch) {
  KernelRunner runner(4);
  std::mt19937 rng(9);
  ExpectMatchesReference(runner, RandomTensor(DataType::kFloat, TensorShape({301, 203}), rng),
                         {1, 0}, DataType::kInt32);
  ExpectMatchesReference(runner, RandomTensor(DataType::kUInt8, TensorShape({5, 130, 67}), rng),
                         {0, 2, 1}, DataType::kInt32);
  ExpectMatchesReference(runner, RandomTensor(DataType::kInt64, TensorShape({6, 7, 30, 40}), rng),
                         {3, 1, 0, 2}, DataType::kInt64);
  ExpectMatchesReference(runner, RandomTensor(DataType::kBool, TensorShape({40, 30, 35}), rng),
                         {1, 2, 0}, DataType::kInt32);
}

TEST(TransposeOpTest, HighRankUsesTheStridedLoop) {
  KernelRunner runner;
  std::mt19937 rng(10);
  Tensor x = RandomTensor(DataType::kInt32, TensorShape({2, 3, 2, 2, 3, 2, 2}), rng);
  ExpectMatchesReference(runner, x, {6, 4, 2, 0, 1, 3, 5}, DataType::kInt32);
  ExpectMatchesReference(runner, x, {1, 0, 3, 2, 5, 4, 6}, DataType::kInt64);
  Tensor big = RandomTensor(DataType::kFloat, TensorShape({2, 3, 4, 5, 2, 3, 4, 2}), rng);
  ExpectMatchesReference(runner, big, {7, 5, 3, 1, 0, 2, 4, 6}, DataType::kInt32);
}

TEST(TransposeOpTest, OrderPreservingPermutationsShareTheBuffer) {
  KernelRunner runner;
  std::mt19937 rng(11);
  const std::vector<std::pair<TensorShape, std::vector<int64_t>>> cases = {
      {TensorShape({2, 3}), {0, 1}},
      {TensorShape({1, 5, 1, 3}), {2, 0, 1, 3}},
      {TensorShape({4, 1}), {1, 0}},
      {TensorShape(), {}}};
  for (const auto& [shape, perm] : cases) {
    Tensor x = RandomTensor(DataType::kFloat, shape, rng);
    StatusOr<Tensor> y = runner.RunOne("Transpose", {x, IndexVector(DataType::kInt32, perm)});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TENSOR_EQ(*y, ReferenceTranspose(x, perm));
    EXPECT_TRUE(y->SharesBufferWith(x)) << shape;
  }
}

TEST(TransposeOpTest, InvalidPermutationsFail) {
  KernelRunner runner;
  Tensor x(DataType::kFloat, TensorShape({2, 3}));
  const std::vector<std::pair<std::vector<int64_t>, std::string>> cases = {
      {{0, 0}, "not a permutation"},
      {{0, 2}, "not a permutation"},
      {{-1, 0}, "not a permutation"},
      {{0, 1, 2}, "3 entries"}};
  for (const auto& [perm, fragment] : cases) {
    Tensor p = IndexVector(DataType::kInt32, perm);
    EXPECT_TRUE(
        IsNodeError(runner.RunOne("Transpose", {x, p}).status(), "test_Transpose", fragment));
    EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "Transpose", {x, p}).status(),
                            "test_Transpose", fragment));
  }
  Tensor matrix_perm = IndexVector(DataType::kInt32, {1, 0}).Reshaped(TensorShape({1, 2}));
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "Transpose", {x, matrix_perm}).status(),
                          "test_Transpose", "must be a vector"));
}

}  // namespace
}  // namespace weft::kernels::array
