// Tests for the BroadcastGradientArgs kernel: the reduction axes for the broadcasts the reference
// system documents, both index dtypes, the shape function's exact output lengths, and errors.
#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using weft::testing::KernelRunner;

void ExpectAxes(KernelRunner& runner, std::vector<int32_t> s0, std::vector<int32_t> s1,
                std::vector<int32_t> r0, std::vector<int32_t> r1) {
  StatusOr<std::vector<Tensor>> r = runner.Run(
      "BroadcastGradientArgs", {Tensor::FromVector<int32_t>(s0), Tensor::FromVector<int32_t>(s1)});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TENSOR_EQ((*r)[0], Tensor::FromVector<int32_t>(r0));
  EXPECT_TENSOR_EQ((*r)[1], Tensor::FromVector<int32_t>(r1));
}

TEST(BroadcastGradientArgsOpTest, ReductionAxes) {
  KernelRunner runner;
  ExpectAxes(runner, {2, 3}, {3}, {}, {0});
  ExpectAxes(runner, {3}, {2, 3}, {0}, {});
  ExpectAxes(runner, {4, 1, 3}, {5, 1}, {1}, {0, 2});
  ExpectAxes(runner, {}, {2, 3}, {0, 1}, {});
  ExpectAxes(runner, {2, 3}, {2, 3}, {}, {});
  ExpectAxes(runner, {1}, {1}, {}, {});
  // Axes where every side is 1 are reduced for both.
  ExpectAxes(runner, {2, 1}, {1}, {1}, {0, 1});
  ExpectAxes(runner, {2, 0}, {1}, {}, {0, 1});
}

TEST(BroadcastGradientArgsOpTest, Int64) {
  KernelRunner runner;
  StatusOr<std::vector<Tensor>> r =
      runner.Run("BroadcastGradientArgs",
                 {Tensor::FromVector<int64_t>({8, 1, 6}), Tensor::FromVector<int64_t>({7, 1})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TENSOR_EQ((*r)[0], Tensor::FromVector<int64_t>({1}));
  EXPECT_TENSOR_EQ((*r)[1], Tensor::FromVector<int64_t>({0, 2}));
}

TEST(BroadcastGradientArgsOpTest, RejectsBadShapesNamingTheNode) {
  KernelRunner runner;
  StatusOr<std::vector<Tensor>> r =
      runner.Run("BroadcastGradientArgs",
                 {Tensor::FromVector<int32_t>({2, 3}), Tensor::FromVector<int32_t>({4})});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsInvalidArgument(r.status()));
  EXPECT_NE(r.status().message().find("node 'test_BroadcastGradientArgs' (BroadcastGradientArgs)"),
            std::string::npos)
      << r.status();
  const std::map<std::string, proto::AttrValue> attrs = {{"T", MakeAttrValue(DataType::kInt32)}};
  StatusOr<std::vector<Tensor>> k = testing::RunKernelOnly(
      "BroadcastGradientArgs",
      {Tensor::FromVector<int32_t>({2, 3}), Tensor::FromVector<int32_t>({4})}, attrs);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message(),
            "node 'k' (BroadcastGradientArgs): incompatible shapes: [2,3] vs. [4]");
  StatusOr<std::vector<Tensor>> negative = testing::RunKernelOnly(
      "BroadcastGradientArgs",
      {Tensor::FromVector<int32_t>({-1}), Tensor::FromVector<int32_t>({4})}, attrs);
  EXPECT_FALSE(negative.ok());
  StatusOr<std::vector<Tensor>> matrix = testing::RunKernelOnly(
      "BroadcastGradientArgs",
      {Tensor::FromVector<int32_t>({1, 2}, TensorShape({1, 2})), Tensor::FromVector<int32_t>({4})},
      attrs);
  EXPECT_FALSE(matrix.ok());
}

}  // namespace
}  // namespace weft::kernels
