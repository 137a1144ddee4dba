// Tests for the Add, Sub and Mul kernels: hand-computed values, a broadcasting reference loop over
// every path of BinaryOp (same shape, scalar, rows, general rank 2-5, thread pool sizes), buffer
// reuse, and the error paths.
#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomTensor;
using testing::ReferenceBinary;
using weft::testing::KernelRunner;

TEST(CwiseArithOpsTest, AddSubMulHandValues) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  Tensor y = Tensor::FromVector<float>({10, 20, 30, 40}, TensorShape({2, 2}));
  StatusOr<Tensor> sum = runner.RunOne("Add", {x, y});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_TENSOR_EQ(*sum, Tensor::FromVector<float>({11, 22, 33, 44}, TensorShape({2, 2})));
  StatusOr<Tensor> diff = runner.RunOne("Sub", {x, y});
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_TENSOR_EQ(*diff, Tensor::FromVector<float>({-9, -18, -27, -36}, TensorShape({2, 2})));
  StatusOr<Tensor> product = runner.RunOne(
      "Mul", {Tensor::FromVector<int64_t>({2, -3}), Tensor::FromVector<int64_t>({5, 7})});
  ASSERT_TRUE(product.ok()) << product.status();
  EXPECT_TENSOR_EQ(*product, Tensor::FromVector<int64_t>({10, -21}));
}

TEST(CwiseArithOpsTest, BroadcastsRowsAndColumnsByHand) {
  KernelRunner runner;
  // [2,3] - [3] and [3] - [2,3].
  Tensor m = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Tensor v = Tensor::FromVector<int32_t>({1, 10, 100});
  StatusOr<Tensor> a = runner.RunOne("Sub", {m, v});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TENSOR_EQ(*a, Tensor::FromVector<int32_t>({0, -8, -97, 3, -5, -94}, TensorShape({2, 3})));
  StatusOr<Tensor> b = runner.RunOne("Sub", {v, m});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TENSOR_EQ(*b, Tensor::FromVector<int32_t>({0, 8, 97, -3, 5, 94}, TensorShape({2, 3})));
  // [4,1,3] + [5,1] -> [4,5,3]; spot-check one element: x[3,0,2] + y[4,0].
  Tensor x = RandomTensor<double>(TensorShape({4, 1, 3}), 1);
  Tensor y = RandomTensor<double>(TensorShape({5, 1}), 2);
  StatusOr<Tensor> c = runner.RunOne("Add", {x, y});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->shape(), TensorShape({4, 5, 3}));
  EXPECT_EQ(c->data<double>()[3 * 15 + 4 * 3 + 2],
            x.data<double>()[3 * 3 + 2] + y.data<double>()[4]);
}

template <typename T>
void CheckAgainstReference(KernelRunner& runner, const TensorShape& xs, const TensorShape& ys,
                           uint32_t seed) {
  Tensor x = RandomTensor<T>(xs, seed);
  Tensor y = RandomTensor<T>(ys, seed + 1);
  struct Case {
    const char* op;
    T (*fn)(T, T);
  };
  for (const Case& c : {Case{"Add", [](T a, T b) -> T { return a + b; }},
                        Case{"Sub", [](T a, T b) -> T { return a - b; }},
                        Case{"Mul", [](T a, T b) -> T { return a * b; }}}) {
    for (bool swap : {false, true}) {
      const Tensor& l = swap ? y : x;
      const Tensor& r = swap ? x : y;
      StatusOr<Tensor> z = runner.RunOne(c.op, {l, r});
      ASSERT_TRUE(z.ok()) << c.op << " " << l.shape() << " " << r.shape() << ": " << z.status();
      EXPECT_TENSOR_EQ(*z, (ReferenceBinary<T, T>(l, r, c.fn)))
          << c.op << " " << l.shape() << " " << r.shape();
    }
  }
}

TEST(CwiseArithOpsTest, MatchesReferenceLoopOnEveryPath) {
  KernelRunner runner;
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {TensorShape({2, 3}), TensorShape({2, 3})},                    // same shape
      {TensorShape({1, 3}), TensorShape({3})},                       // same elements, other rank
      {TensorShape({}), TensorShape({})},                            // rank 0
      {TensorShape({}), TensorShape({2, 3})},                        // scalar with tensor
      {TensorShape({1, 1}), TensorShape({4})},                       // one element
      {TensorShape({2, 3}), TensorShape({3})},                       // [N,C] op [C], narrow
      {TensorShape({7, 20}), TensorShape({20})},                     // row path
      {TensorShape({4, 1, 3}), TensorShape({5, 1})},                 // general rank 3
      {TensorShape({3, 1}), TensorShape({1, 4})},                    // outer product
      {TensorShape({2, 1, 3, 1}), TensorShape({1, 4, 1, 5})},        // rank 4
      {TensorShape({2, 1, 3, 1, 2}), TensorShape({1, 2, 1, 3, 1})},  // rank 5
      {TensorShape({0, 3}), TensorShape({3})},                       // empty
      {TensorShape({2, 0}), TensorShape({1})},                       // empty with scalar
      {TensorShape({300, 120}), TensorShape({120})},                 // row path, thread pool
      {TensorShape({40, 1, 30}), TensorShape({1, 50, 30})},          // general, thread pool
      {TensorShape({300, 1}), TensorShape({1, 200})},                // both expanded, pool
      {TensorShape({200, 200}), TensorShape({})},                    // scalar, thread pool
      {TensorShape({50000}), TensorShape({50000})},                  // flat, thread pool
  };
  uint32_t seed = 10;
  for (const auto& [xs, ys] : shapes) {
    CheckAgainstReference<float>(runner, xs, ys, seed++);
    CheckAgainstReference<int32_t>(runner, xs, ys, seed++);
  }
  CheckAgainstReference<double>(runner, TensorShape({4, 1, 3}), TensorShape({5, 1}), seed++);
  CheckAgainstReference<int64_t>(runner, TensorShape({2, 3}), TensorShape({3}), seed++);
}

TEST(CwiseArithOpsTest, ReusesAnInputBufferNoOneElseHolds) {
  KernelRunner runner;
  Tensor x = RandomTensor<float>(TensorShape({8, 4}), 3);
  const void* x_data = x.raw_data();
  std::vector<Tensor> inputs;
  inputs.push_back(std::move(x));
  inputs.push_back(RandomTensor<float>(TensorShape({4}), 4));
  StatusOr<Tensor> z = runner.RunOne("Add", std::move(inputs));
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->raw_data(), x_data);
}

TEST(CwiseArithOpsTest, RejectsIncompatibleShapesNamingTheNode) {
  KernelRunner runner;
  StatusOr<Tensor> z = runner.RunOne("Add", {RandomTensor<float>(TensorShape({2, 3}), 1),
                                             RandomTensor<float>(TensorShape({4}), 2)});
  ASSERT_FALSE(z.ok());
  EXPECT_TRUE(IsInvalidArgument(z.status()));
  EXPECT_NE(z.status().message().find("node 'test_Add' (Add)"), std::string::npos) << z.status();
  // The kernel checks too, when no shape function ran first.
  StatusOr<std::vector<Tensor>> k = testing::RunKernelOnly(
      "Mul",
      {RandomTensor<float>(TensorShape({2, 3}), 1), RandomTensor<float>(TensorShape({2}), 2)},
      {{"T", MakeAttrValue(DataType::kFloat)}});
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(IsInvalidArgument(k.status()));
  EXPECT_NE(k.status().message().find("node 'k' (Mul): incompatible shapes: [2,3] vs. [2]"),
            std::string::npos)
      << k.status();
}

TEST(CwiseArithOpsTest, BroadcastsAtAnyRank) {
  // The general path expands each broadcast side, so no rank limit applies after merging.
  KernelRunner runner;
  CheckAgainstReference<float>(runner, TensorShape({2, 1, 2, 1, 2, 1}),
                               TensorShape({1, 2, 1, 2, 1, 2}), 7);
  CheckAgainstReference<int64_t>(runner, TensorShape({3, 1, 2, 1, 2, 1, 2}),
                                 TensorShape({1, 2, 1, 3, 1, 2, 1}), 8);
  CheckAgainstReference<double>(runner, TensorShape({2, 3, 1, 1, 2, 2}),
                                TensorShape({1, 1, 5, 2, 2, 2}), 9);
}

TEST(CwiseArithOpsTest, UnregisteredDtypeIsAnError) {
  KernelRunner runner;
  StatusOr<Tensor> z = runner.RunOne(
      "Add", {Tensor::FromVector<uint8_t>({1, 2}), Tensor::FromVector<uint8_t>({3, 4})});
  EXPECT_FALSE(z.ok());
  StatusOr<Tensor> b =
      runner.RunOne("Mul", {Tensor::FromVector<bool>({true}), Tensor::FromVector<bool>({false})});
  EXPECT_FALSE(b.ok());
}

}  // namespace
}  // namespace weft::kernels
