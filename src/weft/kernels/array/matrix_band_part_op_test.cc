// Tests of the MatrixBandPart kernel: the reference's documented examples, a reference loop over
// batches of (non-)square and empty matrices for every dtype and band (0, -1, other negatives,
// positive, up to the dims), int32/int64 counts, threaded, in place, pass-through, and errors.
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::AllTypes;
using testing::CopyElement;
using testing::IndexScalar;
using testing::IsNodeError;
using testing::RandomTensor;
using testing::RunKernelOnly;
using weft::testing::KernelRunner;

// x with every element [..., m, n] outside the band zeroed, element by element.
Tensor ReferenceBand(const Tensor& x, int64_t num_lower, int64_t num_upper) {
  Tensor y(x.dtype(), x.shape());
  std::memset(y.raw_data(), 0, y.TotalBytes());
  const int64_t rows = x.dim_size(x.dims() - 2), cols = x.dim_size(x.dims() - 1);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const int64_t m = (i / cols) % rows, n = i % cols;
    if ((num_lower < 0 || m - n <= num_lower) && (num_upper < 0 || n - m <= num_upper)) {
      CopyElement(x, i, y, i);
    }
  }
  return y;
}

StatusOr<Tensor> Band(KernelRunner& runner, const Tensor& x, int64_t num_lower, int64_t num_upper,
                      DataType index_type = DataType::kInt64) {
  return runner.RunOne("MatrixBandPart",
                       {x, IndexScalar(index_type, num_lower), IndexScalar(index_type, num_upper)});
}

// The reference's documentation example.
TEST(MatrixBandPartOpTest, DocumentedExamples) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<float>({0, 1, 2, 3, -1, 0, 1, 2, -2, -1, 0, 1, -3, -2, -1, 0},
                                       TensorShape({4, 4}));
  StatusOr<Tensor> y = Band(runner, x, 1, -1);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y,
                   Tensor::FromVector<float>({0, 1, 2, 3, -1, 0, 1, 2, 0, -1, 0, 1, 0, 0, -1, 0},
                                             TensorShape({4, 4})));
  y = Band(runner, x, 2, 1, DataType::kInt32);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y,
                   Tensor::FromVector<float>({0, 1, 0, 0, -1, 0, 1, 0, -2, -1, 0, 1, 0, -2, -1, 0},
                                             TensorShape({4, 4})));
  // A causal mask: the lower triangle of ones.
  Tensor ones = Tensor::FromVector<double>(std::vector<double>(6, 1), TensorShape({2, 3}));
  y = Band(runner, ones, -1, 0);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<double>({1, 0, 0, 1, 1, 0}, TensorShape({2, 3})));
}

TEST(MatrixBandPartOpTest, BatchesOfMatricesMatchTheReference) {
  KernelRunner runner;
  std::mt19937 rng(25);
  const std::vector<TensorShape> shapes = {TensorShape({4, 4}),    TensorShape({2, 3, 5}),
                                           TensorShape({3, 5, 2}), TensorShape({2, 2, 4, 3}),
                                           TensorShape({1, 1}),    TensorShape({6, 1}),
                                           TensorShape({1, 6}),    TensorShape({0, 3, 4}),
                                           TensorShape({3, 0, 4}), TensorShape({2, 3, 0})};
  for (DataType dtype : AllTypes()) {
    for (const TensorShape& shape : shapes) {
      const Tensor x = RandomTensor(dtype, shape, rng);
      const int64_t rows = shape.dim_size(shape.dims() - 2),
                    cols = shape.dim_size(shape.dims() - 1);
      for (int64_t lower : {int64_t{-1}, int64_t{-7}, int64_t{0}, int64_t{1}, int64_t{2}, rows}) {
        for (int64_t upper : {int64_t{-1}, int64_t{-3}, int64_t{0}, int64_t{1}, cols - 1, cols}) {
          if (lower > rows || upper > cols) continue;
          const DataType index_type = (lower + upper) % 2 ? DataType::kInt32 : DataType::kInt64;
          StatusOr<Tensor> y = Band(runner, x, lower, upper, index_type);
          ASSERT_TRUE(y.ok()) << y.status();
          EXPECT_TENSOR_EQ(*y, ReferenceBand(x, lower, upper))
              << DataTypeName(dtype) << " " << shape << " bands " << lower << ", " << upper;
        }
      }
    }
  }
}

TEST(MatrixBandPartOpTest, LargeInputsUseThreadsAndMatch) {
  KernelRunner runner(4);
  std::mt19937 rng(26);
  const Tensor x = RandomTensor(DataType::kFloat, TensorShape({6, 130, 170}), rng);
  for (auto [lower, upper] : {std::pair<int64_t, int64_t>{-1, 0}, {3, 40}, {0, -1}, {129, 5}}) {
    StatusOr<Tensor> y = Band(runner, x, lower, upper);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TENSOR_EQ(*y, ReferenceBand(x, lower, upper)) << lower << ", " << upper;
  }
}

// An input nothing else holds is banded in place; a band covering whole matrices (negative or at
// least the dim minus one) passes even a shared input through uncopied.
TEST(MatrixBandPartOpTest, InPlaceAndPassThrough) {
  KernelRunner runner;
  std::mt19937 rng(27);
  const Tensor x = RandomTensor(DataType::kDouble, TensorShape({3, 4, 5}), rng);
  Tensor own = x.DeepCopy();
  const void* buffer = own.raw_data();
  std::vector<Tensor> inputs;
  inputs.push_back(std::move(own));
  inputs.push_back(IndexScalar(DataType::kInt64, 1));
  inputs.push_back(IndexScalar(DataType::kInt64, 0));
  StatusOr<Tensor> y = runner.RunOne("MatrixBandPart", std::move(inputs));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, ReferenceBand(x, 1, 0));
  EXPECT_EQ(y->raw_data(), buffer);
  for (auto [lower, upper] : {std::pair<int64_t, int64_t>{-1, -1}, {3, 4}, {4, 5}, {-2, 4}}) {
    y = Band(runner, x, lower, upper);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TENSOR_EQ(*y, x);
    EXPECT_TRUE(y->SharesBufferWith(x)) << lower << ", " << upper;
  }
}

// As in the reference: a count above the rows (columns) is an error, any negative count keeps the
// whole triangle. Errors come from the shape function when the counts are constant, and from the
// kernel when they are not.
TEST(MatrixBandPartOpTest, Errors) {
  KernelRunner runner;
  std::mt19937 rng(28);
  const Tensor x = RandomTensor(DataType::kFloat, TensorShape({2, 3, 4}), rng);
  const Tensor one = IndexScalar(DataType::kInt64, 1);
  struct Case {
    std::vector<Tensor> inputs;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{RandomTensor(DataType::kFloat, TensorShape({4}), rng), one, one}, "rank at least 2"},
      {{x, IndexScalar(DataType::kInt64, 4), one},
       "num_lower must be negative or at most the number of rows (3), but is 4"},
      {{x, IndexScalar(DataType::kInt32, 1), IndexScalar(DataType::kInt32, 5)},
       "num_upper must be negative or at most the number of columns (4), but is 5"},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(IsNodeError(runner.RunOne("MatrixBandPart", c.inputs).status(),
                            "test_MatrixBandPart", c.fragment));
    EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "MatrixBandPart", c.inputs).status(),
                            "test_MatrixBandPart", c.fragment));
  }
  // A count that is not a scalar.
  const Tensor pair = Tensor::FromVector<int64_t>({1, 1});
  EXPECT_TRUE(IsNodeError(runner.RunOne("MatrixBandPart", {x, pair, one}).status(),
                          "test_MatrixBandPart", "rank 0"));
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "MatrixBandPart", {x, one, pair}).status(),
                          "test_MatrixBandPart", "num_upper must be a scalar, but has shape [2]"));
  // Counts of different index types do not make one node.
  EXPECT_FALSE(runner.RunOne("MatrixBandPart", {x, one, IndexScalar(DataType::kInt32, 1)}).ok());
  // Negative counts other than -1 are the whole triangle, not an error.
  StatusOr<Tensor> y = Band(runner, x, -5, -100);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, x);
}

}  // namespace
}  // namespace weft::kernels::array
