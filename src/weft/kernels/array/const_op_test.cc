// Tests of the Const and Placeholder kernels.
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

std::map<std::string, proto::AttrValue> ConstAttrs(const Tensor& value) {
  return {{"value", MakeAttrValue(value)}, {"dtype", MakeAttrValue(value.dtype())}};
}

TEST(ConstOpTest, ReturnsItsValue) {
  KernelRunner runner;
  Tensor value = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  StatusOr<Tensor> out = runner.RunOne("Const", {}, ConstAttrs(value));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TENSOR_EQ(*out, value);
}

TEST(ConstOpTest, ServesEveryDtypeAndShape) {
  KernelRunner runner;
  std::mt19937 rng(1);
  for (DataType dtype : AllTypes()) {
    for (const TensorShape& shape : {TensorShape(), TensorShape({0}), TensorShape({7}),
                                     TensorShape({2, 0, 3}), TensorShape({3, 4, 5})}) {
      Tensor value = RandomTensor(dtype, shape, rng);
      StatusOr<Tensor> out = runner.RunOne("Const", {}, ConstAttrs(value));
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_TENSOR_EQ(*out, value);
    }
  }
}

TEST(ConstOpTest, SharesOneBufferAcrossSteps) {
  KernelRunner runner;
  Tensor value = Tensor::FromVector<int64_t>({4, 5, 6});
  auto kernel = DirectKernel::Create(runner.device(), "Const", {}, ConstAttrs(value));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE((*kernel)->kernel().IsCheap());
  auto first = (*kernel)->Compute({});
  auto second = (*kernel)->Compute({});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TENSOR_EQ((*first)[0], value);
  EXPECT_TRUE((*first)[0].SharesBufferWith((*second)[0]));
}

TEST(ConstOpTest, ValueOfAnotherDtypeFailsAtConstruction) {
  KernelRunner runner;
  auto attrs = ConstAttrs(Tensor::FromVector<float>({1, 2}));
  attrs["dtype"] = MakeAttrValue(DataType::kInt32);
  auto kernel = DirectKernel::Create(runner.device(), "Const", {}, attrs);
  ASSERT_FALSE(kernel.ok());
  EXPECT_TRUE(IsInvalidArgument(kernel.status())) << kernel.status();
  EXPECT_NE(kernel.status().message().find("node 'test_Const' (Const): value is a float32 tensor, "
                                           "but dtype is int32"),
            std::string::npos)
      << kernel.status();
  // Shape inference rejects it too, before any kernel is built.
  EXPECT_TRUE(IsNodeError(runner.RunOne("Const", {}, attrs).status(), "test_Const", "dtype"));
}

TEST(PlaceholderOpTest, RunningAnUnfedPlaceholderFails) {
  KernelRunner runner;
  StatusOr<Tensor> out = runner.RunOne("Placeholder", {},
                                       {{"dtype", MakeAttrValue(DataType::kFloat)},
                                        {"shape", MakeAttrValue(PartialShape({-1, 784}))}});
  EXPECT_TRUE(IsNodeError(out.status(), "test_Placeholder",
                          "You must feed a value for placeholder 'test_Placeholder' with dtype "
                          "float32 and shape [?,784]"));
}

TEST(PlaceholderOpTest, ShapeDefaultsToUnknownRank) {
  KernelRunner runner;
  auto kernel = DirectKernel::Create(runner.device(), "Placeholder", {},
                                     {{"dtype", MakeAttrValue(DataType::kInt64)}});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE((*kernel)->kernel().IsCheap());
  EXPECT_TRUE(IsNodeError((*kernel)->Compute({}).status(), "test_Placeholder",
                          "with dtype int64 and shape <unknown>"));
}

}  // namespace
}  // namespace weft::kernels::array
