// Tests of the Identity, StopGradient and NoOp kernels.
#include <gtest/gtest.h>

#include "weft/kernels/testing/array_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::array {
namespace {

using testing::AllTypes;
using testing::DirectKernel;
using testing::RandomTensor;
using weft::testing::KernelRunner;

TEST(IdentityOpTest, ForwardsTheInputBufferForEveryDtype) {
  KernelRunner runner;
  std::mt19937 rng(2);
  for (const char* op : {"Identity", "StopGradient"}) {
    for (DataType dtype : AllTypes()) {
      for (const TensorShape& shape : {TensorShape(), TensorShape({3, 4}), TensorShape({0, 2})}) {
        Tensor x = RandomTensor(dtype, shape, rng);
        StatusOr<Tensor> y = runner.RunOne(op, {x});
        ASSERT_TRUE(y.ok()) << y.status();
        EXPECT_TENSOR_EQ(*y, x);
        EXPECT_TRUE(y->SharesBufferWith(x)) << op;
      }
    }
  }
}

TEST(IdentityOpTest, HandValues) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<double>({1.5, -2.5});
  StatusOr<Tensor> y = runner.RunOne("Identity", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, Tensor::FromVector<double>({1.5, -2.5}));
}

TEST(IdentityOpTest, MetadataKernelsAreCheap) {
  KernelRunner runner;
  for (const char* op : {"Identity", "StopGradient"}) {
    auto kernel = DirectKernel::Create(runner.device(), op, {DataType::kFloat});
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_TRUE((*kernel)->kernel().IsCheap()) << op;
  }
  auto no_op = DirectKernel::Create(runner.device(), "NoOp", {});
  ASSERT_TRUE(no_op.ok()) << no_op.status();
  EXPECT_TRUE((*no_op)->kernel().IsCheap());
}

TEST(NoOpTest, HasNoOutputs) {
  KernelRunner runner;
  StatusOr<std::vector<Tensor>> outputs = runner.Run("NoOp", {});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  EXPECT_TRUE(outputs->empty());
}

}  // namespace
}  // namespace weft::kernels::array
