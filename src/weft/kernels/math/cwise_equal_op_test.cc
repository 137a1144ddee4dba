// Tests for the Equal kernel: hand values for each dtype, broadcasting against a reference loop,
// and the bool output type.
#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomTensor;
using testing::ReferenceBinary;
using weft::testing::KernelRunner;

TEST(CwiseEqualOpTest, HandValues) {
  KernelRunner runner;
  StatusOr<Tensor> f = runner.RunOne(
      "Equal", {Tensor::FromVector<float>({1, 2, 3}), Tensor::FromVector<float>({1, 5, 3})});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TENSOR_EQ(*f, Tensor::FromVector<bool>({true, false, true}));
  StatusOr<Tensor> b = runner.RunOne(
      "Equal", {Tensor::FromVector<bool>({true, false}), Tensor::Scalar<bool>(false)});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TENSOR_EQ(*b, Tensor::FromVector<bool>({false, true}));
  StatusOr<Tensor> i =
      runner.RunOne("Equal", {Tensor::FromVector<int64_t>({4, 5}, TensorShape({2, 1})),
                              Tensor::FromVector<int64_t>({4, 5, 6})});
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_TENSOR_EQ(
      *i, Tensor::FromVector<bool>({true, false, false, false, true, false}, TensorShape({2, 3})));
}

template <typename T>
void CheckAgainstReference(KernelRunner& runner, const TensorShape& xs, const TensorShape& ys,
                           uint32_t seed) {
  Tensor x = RandomTensor<T>(xs, seed, 0, 2);
  Tensor y = RandomTensor<T>(ys, seed + 1, 0, 2);
  for (bool swap : {false, true}) {
    const Tensor& l = swap ? y : x;
    const Tensor& r = swap ? x : y;
    StatusOr<Tensor> z = runner.RunOne("Equal", {l, r});
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_TENSOR_EQ(*z, (ReferenceBinary<T, bool>(l, r, [](T a, T b) { return a == b; })))
        << l.shape() << " == " << r.shape();
  }
}

TEST(CwiseEqualOpTest, MatchesReferenceLoop) {
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
  uint32_t seed = 200;
  for (const auto& [xs, ys] : shapes) {
    CheckAgainstReference<float>(runner, xs, ys, seed++);
    CheckAgainstReference<double>(runner, xs, ys, seed++);
    CheckAgainstReference<int32_t>(runner, xs, ys, seed++);
    CheckAgainstReference<int64_t>(runner, xs, ys, seed++);
    CheckAgainstReference<bool>(runner, xs, ys, seed++);
  }
}

TEST(CwiseEqualOpTest, RejectsIncompatibleShapesAndUnregisteredDtypes) {
  KernelRunner runner;
  StatusOr<Tensor> z = runner.RunOne(
      "Equal", {Tensor::FromVector<float>({1, 2}), Tensor::FromVector<float>({1, 2, 3})});
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("node 'test_Equal' (Equal)"), std::string::npos);
  StatusOr<Tensor> u =
      runner.RunOne("Equal", {Tensor::FromVector<uint8_t>({1}), Tensor::FromVector<uint8_t>({1})});
  EXPECT_FALSE(u.ok());
}

}  // namespace
}  // namespace weft::kernels
