// Tests for the Less, LessEqual, Greater and GreaterEqual kernels: hand values with ties and NaN,
// broadcasting against a reference loop for every dtype, and the errors.
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomTensor;
using testing::ReferenceBinary;
using weft::testing::KernelRunner;

TEST(CwiseCompareOpsTest, HandValuesWithTiesAndNan) {
  KernelRunner runner;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::FromVector<float>({1, 2, 3, nan});
  Tensor y = Tensor::FromVector<float>({2, 2, 2, 1});
  const std::pair<const char*, std::vector<bool>> cases[] = {
      {"Less", {true, false, false, false}},
      {"LessEqual", {true, true, false, false}},
      {"Greater", {false, false, true, false}},
      {"GreaterEqual", {false, true, true, false}},
  };
  for (const auto& [op, expected] : cases) {
    StatusOr<Tensor> z = runner.RunOne(op, {x, y});
    ASSERT_TRUE(z.ok()) << op << ": " << z.status();
    EXPECT_TENSOR_EQ(*z, Tensor::FromVector<bool>(expected)) << op;
  }
  StatusOr<Tensor> i =
      runner.RunOne("Greater", {Tensor::FromVector<int64_t>({4, 5}, TensorShape({2, 1})),
                                Tensor::FromVector<int64_t>({3, 4, 5})});
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_TENSOR_EQ(
      *i, Tensor::FromVector<bool>({true, false, false, true, true, false}, TensorShape({2, 3})));
}

template <typename T, typename Cmp>
void CheckOp(KernelRunner& runner, const std::string& op, Cmp cmp, const TensorShape& xs,
             const TensorShape& ys, uint32_t seed) {
  // Few distinct values, so that ties are common.
  Tensor x = RandomTensor<T>(xs, seed, 0, 3);
  Tensor y = RandomTensor<T>(ys, seed + 1, 0, 3);
  for (bool swap : {false, true}) {
    const Tensor& l = swap ? y : x;
    const Tensor& r = swap ? x : y;
    StatusOr<Tensor> z = runner.RunOne(op, {l, r});
    ASSERT_TRUE(z.ok()) << op << ": " << z.status();
    EXPECT_TENSOR_EQ(*z, (ReferenceBinary<T, bool>(l, r, cmp)))
        << op << " " << l.shape() << " vs " << r.shape();
  }
}

template <typename T>
void CheckAll(KernelRunner& runner, const TensorShape& xs, const TensorShape& ys, uint32_t seed) {
  CheckOp<T>(
      runner, "Less", [](T a, T b) { return a < b; }, xs, ys, seed);
  CheckOp<T>(
      runner, "LessEqual", [](T a, T b) { return a <= b; }, xs, ys, seed + 2);
  CheckOp<T>(
      runner, "Greater", [](T a, T b) { return a > b; }, xs, ys, seed + 4);
  CheckOp<T>(
      runner, "GreaterEqual", [](T a, T b) { return a >= b; }, xs, ys, seed + 6);
}

TEST(CwiseCompareOpsTest, MatchesReferenceLoop) {
  KernelRunner runner;
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {TensorShape({2, 3}), TensorShape({3})},
      {TensorShape({4, 1, 3}), TensorShape({5, 1})},
      {TensorShape({}), TensorShape({2, 3})},
      {TensorShape({6}), TensorShape({6})},
      {TensorShape({9, 40}), TensorShape({40})},
      {TensorShape({0, 2}), TensorShape({2})},
      {TensorShape({100, 400}), TensorShape({100, 1})},
  };
  uint32_t seed = 400;
  for (const auto& [xs, ys] : shapes) {
    CheckAll<float>(runner, xs, ys, seed += 8);
    CheckAll<double>(runner, xs, ys, seed += 8);
    CheckAll<int32_t>(runner, xs, ys, seed += 8);
    CheckAll<int64_t>(runner, xs, ys, seed += 8);
  }
}

TEST(CwiseCompareOpsTest, RejectsIncompatibleShapesAndBool) {
  KernelRunner runner;
  for (const char* op : {"Less", "LessEqual", "Greater", "GreaterEqual"}) {
    StatusOr<Tensor> z = runner.RunOne(
        op, {Tensor::FromVector<float>({1, 2}), Tensor::FromVector<float>({1, 2, 3})});
    ASSERT_FALSE(z.ok()) << op;
    EXPECT_TRUE(IsInvalidArgument(z.status())) << z.status();
    EXPECT_NE(z.status().message().find("[2] and [3] cannot be broadcast"), std::string::npos)
        << z.status();
    // Kernel only: the broadcast check of the kernel itself.
    StatusOr<std::vector<Tensor>> k = testing::RunKernelOnly(
        op, {Tensor::FromVector<int32_t>({1, 2}), Tensor::FromVector<int32_t>({1, 2, 3})},
        {{"T", MakeAttrValue(DataType::kInt32)}});
    ASSERT_FALSE(k.ok()) << op;
    EXPECT_NE(k.status().message().find("node 'k' (" + std::string(op) + ")"), std::string::npos)
        << k.status();
    EXPECT_NE(k.status().message().find("incompatible shapes: [2] vs. [3]"), std::string::npos)
        << k.status();
    // Orderings are defined on numbers only, as in the reference system.
    EXPECT_FALSE(
        runner.RunOne(op, {Tensor::FromVector<bool>({true}), Tensor::FromVector<bool>({false})})
            .ok())
        << op;
  }
}

}  // namespace
}  // namespace weft::kernels
