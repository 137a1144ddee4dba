// Tests of the GatherV2 kernel: hand values, a reference loop over random shapes, axes, index
// dtypes and every params dtype, sizes that run on the thread pool, and every error: indices out
// of range (named with their position, value and bound), bad axes, params and batch_dims.
#include <random>

#include <gtest/gtest.h>

#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::AllTypes;
using testing::CopyElement;
using testing::IndexScalar;
using testing::IndexVector;
using testing::IsNodeError;
using testing::RandomTensor;
using testing::Ravel;
using testing::RunKernelOnly;
using testing::Unravel;
using weft::testing::KernelRunner;

// An int32/int64 tensor of `shape` holding `values`.
Tensor Indices(DataType dtype, const std::vector<int64_t>& values, const TensorShape& shape) {
  return IndexVector(dtype, values).Reshaped(shape);
}

// out[a..., i..., b...] = params[a..., index[i...], b...].
Tensor ReferenceGather(const Tensor& params, const std::vector<int64_t>& index,
                       const TensorShape& index_shape, int axis) {
  std::vector<int64_t> dims;
  for (int i = 0; i < axis; ++i) dims.push_back(params.dim_size(i));
  for (int64_t d : index_shape.dim_sizes()) dims.push_back(d);
  for (int i = axis + 1; i < params.dims(); ++i) dims.push_back(params.dim_size(i));
  Tensor out(params.dtype(), TensorShape(dims));
  const int k = index_shape.dims();
  for (int64_t o = 0; o < out.NumElements(); ++o) {
    const std::vector<int64_t> at = Unravel(o, out.shape());
    std::vector<int64_t> from(at.begin(), at.begin() + axis);
    const std::vector<int64_t> position(at.begin() + axis, at.begin() + axis + k);
    from.push_back(index[Ravel(position, index_shape)]);
    from.insert(from.end(), at.begin() + axis + k, at.end());
    CopyElement(params, Ravel(from, params.shape()), out, o);
  }
  return out;
}

TEST(GatherV2OpTest, HandValues) {
  KernelRunner runner;
  Tensor params = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  StatusOr<Tensor> rows = runner.RunOne(
      "GatherV2", {params, Indices(DataType::kInt32, {2, 0, 1, 2}, TensorShape({2, 2})),
                   IndexScalar(DataType::kInt32, 0)});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TENSOR_EQ(*rows,
                   Tensor::FromVector<float>({5, 6, 1, 2, 3, 4, 5, 6}, TensorShape({2, 2, 2})));
  // Axis 1 (spelled -1) with a scalar index drops the axis.
  StatusOr<Tensor> column = runner.RunOne(
      "GatherV2", {params, IndexScalar(DataType::kInt64, 1), IndexScalar(DataType::kInt64, -1)});
  ASSERT_TRUE(column.ok()) << column.status();
  EXPECT_TENSOR_EQ(*column, Tensor::FromVector<float>({2, 4, 6}));
  // An empty index list gives an empty axis.
  StatusOr<Tensor> none = runner.RunOne(
      "GatherV2", {params, IndexVector(DataType::kInt32, {}), IndexScalar(DataType::kInt32, 0)});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->shape(), TensorShape({0, 2}));
}

TEST(GatherV2OpTest, MatchesReferenceForEveryDtypeAxisAndIndexType) {
  KernelRunner runner;
  std::mt19937 rng(7);
  const std::vector<TensorShape> params_shapes = {{5}, {4, 3}, {2, 3, 4}, {3, 1, 2, 2}, {3, 0, 2}};
  const std::vector<TensorShape> index_shapes = {{}, {4}, {2, 3}, {0}};
  for (DataType dtype : AllTypes()) {
    for (const TensorShape& shape : params_shapes) {
      Tensor params = RandomTensor(dtype, shape, rng);
      for (int axis = -shape.dims(); axis < shape.dims(); ++axis) {
        const int a = axis < 0 ? axis + shape.dims() : axis;
        if (shape.dim_size(a) == 0) continue;  // no index is in range
        for (const TensorShape& index_shape : index_shapes) {
          std::uniform_int_distribution<int64_t> pick(0, shape.dim_size(a) - 1);
          std::vector<int64_t> index(static_cast<size_t>(index_shape.num_elements()));
          for (int64_t& i : index) i = pick(rng);
          const DataType index_type = index.size() % 2 ? DataType::kInt64 : DataType::kInt32;
          StatusOr<Tensor> out = runner.RunOne(
              "GatherV2", {params, Indices(index_type, index, index_shape),
                           IndexScalar(axis % 2 ? DataType::kInt64 : DataType::kInt32, axis)});
          ASSERT_TRUE(out.ok()) << out.status();
          EXPECT_TENSOR_EQ(*out, ReferenceGather(params, index, index_shape, a))
              << DataTypeName(dtype) << " " << shape << " axis " << axis << " indices "
              << index_shape;
        }
      }
    }
  }
}

TEST(GatherV2OpTest, LargeGathersRunOnTheThreadPool) {
  KernelRunner runner(4);
  std::mt19937 rng(8);
  Tensor params = RandomTensor(DataType::kFloat, TensorShape({300, 7, 40}), rng);
  for (int axis : {0, 1, 2}) {
    std::uniform_int_distribution<int64_t> pick(0, params.dim_size(axis) - 1);
    std::vector<int64_t> index(500);
    for (int64_t& i : index) i = pick(rng);
    StatusOr<Tensor> out = runner.RunOne("GatherV2", {params, IndexVector(DataType::kInt64, index),
                                                      IndexScalar(DataType::kInt32, axis)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TENSOR_EQ(*out, ReferenceGather(params, index, TensorShape({500}), axis)) << axis;
  }
}

TEST(GatherV2OpTest, IndicesOutOfRangeAreErrorsNamingTheIndexAndTheBound) {
  KernelRunner runner;
  Tensor params = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor axis0 = IndexScalar(DataType::kInt32, 0);
  const std::pair<Tensor, std::string> cases[] = {
      {Indices(DataType::kInt32, {0, 1, 3, 0}, TensorShape({2, 2})),
       "indices[1,0] = 3 is not in [0, 3)"},
      {IndexVector(DataType::kInt64, {2, -1}), "indices[1] = -1 is not in [0, 3)"},
      {IndexScalar(DataType::kInt64, int64_t{1} << 40), "indices = 1099511627776 is not in [0, 3)"},
  };
  for (const auto& [indices, fragment] : cases) {
    EXPECT_TRUE(IsNodeError(runner.RunOne("GatherV2", {params, indices, axis0}).status(),
                            "test_GatherV2", fragment));
  }
  EXPECT_TRUE(IsNodeError(runner
                              .RunOne("GatherV2", {params, IndexVector(DataType::kInt32, {2}),
                                                   IndexScalar(DataType::kInt32, 1)})
                              .status(),
                          "test_GatherV2", "indices[0] = 2 is not in [0, 2)"));
}

TEST(GatherV2OpTest, BadAxesParamsAndBatchDimsAreErrors) {
  KernelRunner runner;
  Tensor params = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor index = IndexVector(DataType::kInt32, {0});
  for (int64_t axis : {2, -3}) {
    const std::string fragment = StrCat("axis ", axis, " is out of range [-2, 2) for params");
    Tensor axis_tensor = IndexScalar(DataType::kInt32, axis);
    EXPECT_TRUE(IsNodeError(runner.RunOne("GatherV2", {params, index, axis_tensor}).status(),
                            "test_GatherV2", fragment));
    EXPECT_TRUE(IsNodeError(
        RunKernelOnly(runner.device(), "GatherV2", {params, index, axis_tensor}).status(),
        "test_GatherV2", fragment));
  }
  EXPECT_TRUE(IsNodeError(RunKernelOnly(runner.device(), "GatherV2",
                                        {params, index, IndexVector(DataType::kInt32, {0})})
                              .status(),
                          "test_GatherV2", "axis must be a scalar, but has shape [1]"));
  EXPECT_TRUE(
      IsNodeError(RunKernelOnly(runner.device(), "GatherV2",
                                {Tensor::Scalar<float>(1), index, IndexScalar(DataType::kInt32, 0)})
                      .status(),
                  "test_GatherV2", "params must be at least 1-D"));
  EXPECT_TRUE(IsNodeError(runner
                              .RunOne("GatherV2", {params, index, IndexScalar(DataType::kInt32, 0)},
                                      {{"batch_dims", MakeAttrValue(int64_t{1})}})
                              .status(),
                          "test_GatherV2", "batch_dims must be 0"));
  // Indices must be integers.
  EXPECT_FALSE(runner
                   .RunOne("GatherV2", {params, Tensor::FromVector<float>({0}),
                                        IndexScalar(DataType::kInt32, 0)})
                   .ok());
}

}  // namespace
}  // namespace weft::kernels::array
