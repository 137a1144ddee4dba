// Tests of the Shape, Size and Rank kernels.
#include <gtest/gtest.h>

#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::AllTypes;
using testing::DirectKernel;
using testing::IsNodeError;
using testing::RandomTensor;
using weft::testing::KernelRunner;

TEST(ShapeOpTest, HandValues) {
  KernelRunner runner;
  Tensor x(DataType::kFloat, TensorShape({2, 3, 4}));
  StatusOr<Tensor> shape = runner.RunOne("Shape", {x});
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_TENSOR_EQ(*shape, Tensor::FromVector<int32_t>({2, 3, 4}));
  shape = runner.RunOne("Shape", {x}, {{"out_type", MakeAttrValue(DataType::kInt64)}});
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_TENSOR_EQ(*shape, Tensor::FromVector<int64_t>({2, 3, 4}));
  shape = runner.RunOne("Shape", {Tensor::Scalar<bool>(true)});
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_TENSOR_EQ(*shape, Tensor::FromVector<int32_t>({}));

  StatusOr<Tensor> size = runner.RunOne("Size", {x});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_TENSOR_EQ(*size, Tensor::Scalar<int32_t>(24));
  size = runner.RunOne("Size", {x}, {{"out_type", MakeAttrValue(DataType::kInt64)}});
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_TENSOR_EQ(*size, Tensor::Scalar<int64_t>(24));

  StatusOr<Tensor> rank = runner.RunOne("Rank", {x});
  ASSERT_TRUE(rank.ok()) << rank.status();
  EXPECT_TENSOR_EQ(*rank, Tensor::Scalar<int32_t>(3));
}

TEST(ShapeOpTest, MatchesTheInputShapeForEveryDtype) {
  KernelRunner runner;
  std::mt19937 rng(3);
  for (DataType dtype : AllTypes()) {
    for (const TensorShape& shape :
         {TensorShape(), TensorShape({0}), TensorShape({5, 0, 2}), TensorShape({1, 2, 3, 4, 5})}) {
      Tensor x = RandomTensor(dtype, shape, rng);
      std::vector<int64_t> expected = shape.dim_sizes();
      StatusOr<Tensor> s =
          runner.RunOne("Shape", {x}, {{"out_type", MakeAttrValue(DataType::kInt64)}});
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_TENSOR_EQ(*s, Tensor::FromVector(expected));
      StatusOr<Tensor> n = runner.RunOne("Size", {x});
      ASSERT_TRUE(n.ok()) << n.status();
      EXPECT_TENSOR_EQ(*n, Tensor::Scalar<int32_t>(static_cast<int32_t>(shape.num_elements())));
      StatusOr<Tensor> r = runner.RunOne("Rank", {x});
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_TENSOR_EQ(*r, Tensor::Scalar<int32_t>(shape.dims()));
    }
  }
}

TEST(ShapeOpTest, DimensionTooLargeForInt32Fails) {
  KernelRunner runner;
  // No elements, so nothing is allocated, but one dimension exceeds int32.
  Tensor x(DataType::kFloat, TensorShape({3'000'000'000, 0}));
  EXPECT_TRUE(IsNodeError(runner.RunOne("Shape", {x}).status(), "test_Shape",
                          "3000000000 does not fit in int32"));
  StatusOr<Tensor> wide =
      runner.RunOne("Shape", {x}, {{"out_type", MakeAttrValue(DataType::kInt64)}});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_TENSOR_EQ(*wide, Tensor::FromVector<int64_t>({3'000'000'000, 0}));
}

TEST(ShapeOpTest, KernelsAreCheap) {
  KernelRunner runner;
  for (const char* op : {"Shape", "Size", "Rank"}) {
    auto kernel = DirectKernel::Create(runner.device(), op, {DataType::kDouble});
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_TRUE((*kernel)->kernel().IsCheap()) << op;
  }
}

}  // namespace
}  // namespace weft::kernels::array
