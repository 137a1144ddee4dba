// Tests for the MatMul kernel: hand values, every transpose combination for each dtype against a
// reference triple loop, zero-sized dimensions, and mismatched inner dimensions.
#include <array>

#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/scoped_blas_threads.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomTensor;
using weft::testing::KernelRunner;

std::map<std::string, proto::AttrValue> Transposes(bool a, bool b) {
  return {{"transpose_a", MakeAttrValue(a)}, {"transpose_b", MakeAttrValue(b)}};
}

TEST(MatMulOpTest, HandValues) {
  KernelRunner runner;
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Tensor b = Tensor::FromVector<float>({7, 8, 9, 10, 11, 12}, TensorShape({3, 2}));
  StatusOr<Tensor> c = runner.RunOne("MatMul", {a, b});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TENSOR_EQ(*c, Tensor::FromVector<float>({58, 64, 139, 154}, TensorShape({2, 2})));
  // a^T [3,2] x a [2,3].
  StatusOr<Tensor> g = runner.RunOne("MatMul", {a, a}, Transposes(true, false));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TENSOR_EQ(
      *g, Tensor::FromVector<float>({17, 22, 27, 22, 29, 36, 27, 36, 45}, TensorShape({3, 3})));
  StatusOr<Tensor> i = runner.RunOne(
      "MatMul", {Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})),
                 Tensor::FromVector<int32_t>({7, 8, 9, 10, 11, 12}, TensorShape({3, 2}))});
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_TENSOR_EQ(*i, Tensor::FromVector<int32_t>({58, 64, 139, 154}, TensorShape({2, 2})));
}

template <typename T>
void CheckAgainstReference(KernelRunner& runner, int64_t m, int64_t k, int64_t n, uint32_t seed) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = RandomTensor<T>(ta ? TensorShape({k, m}) : TensorShape({m, k}), seed, -3, 3);
      Tensor b = RandomTensor<T>(tb ? TensorShape({n, k}) : TensorShape({k, n}), seed + 1, -3, 3);
      Tensor expected(a.dtype(), TensorShape({m, n}));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          T sum = 0;
          for (int64_t p = 0; p < k; ++p) {
            const T av = ta ? a.data<T>()[p * m + i] : a.data<T>()[i * k + p];
            const T bv = tb ? b.data<T>()[j * k + p] : b.data<T>()[p * n + j];
            sum += av * bv;
          }
          expected.data<T>()[i * n + j] = sum;
        }
      }
      StatusOr<Tensor> c = runner.RunOne("MatMul", {a, b}, Transposes(ta, tb));
      ASSERT_TRUE(c.ok()) << c.status();
      if constexpr (std::is_floating_point_v<T>) {
        EXPECT_TENSOR_NEAR(*c, expected, 1e-4, 1e-5)
            << m << "x" << k << "x" << n << " " << ta << tb;
      } else {
        EXPECT_TENSOR_EQ(*c, expected) << m << "x" << k << "x" << n << " " << ta << tb;
      }
    }
  }
}

TEST(MatMulOpTest, MatchesReferenceLoopForEveryTransposeAndDtype) {
  KernelRunner runner;
  CheckAgainstReference<float>(runner, 5, 7, 3, 1);
  CheckAgainstReference<float>(runner, 33, 65, 17, 2);
  CheckAgainstReference<double>(runner, 4, 9, 6, 3);
  CheckAgainstReference<int32_t>(runner, 3, 4, 5, 4);
  CheckAgainstReference<int64_t>(runner, 6, 2, 3, 5);
  CheckAgainstReference<float>(runner, 1, 1, 1, 6);
}

TEST(MatMulOpTest, SplitOverThreadsMatchesOneGemmBitForBit) {
  // With OpenBLAS single-threaded the product is split into blocks of rows (tall C) or columns
  // (wide C); each element still sums the same products in the same order.
  weft::testing::ScopedBlasThreads blas(1);
  KernelRunner one_thread(1), two_threads(2);
  for (auto [m, k, n] : {std::array<int64_t, 3>{301, 100, 60}, {40, 100, 333}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Tensor a = RandomTensor<float>(ta ? TensorShape({k, m}) : TensorShape({m, k}), 7, -1, 1);
        Tensor b = RandomTensor<float>(tb ? TensorShape({n, k}) : TensorShape({k, n}), 8, -1, 1);
        StatusOr<Tensor> whole = one_thread.RunOne("MatMul", {a, b}, Transposes(ta, tb));
        StatusOr<Tensor> split = two_threads.RunOne("MatMul", {a, b}, Transposes(ta, tb));
        ASSERT_TRUE(whole.ok()) << whole.status();
        ASSERT_TRUE(split.ok()) << split.status();
        EXPECT_TENSOR_EQ(*split, *whole) << m << "x" << k << "x" << n << " " << ta << tb;
      }
    }
  }
  CheckAgainstReference<float>(two_threads, 301, 100, 60, 9);
  CheckAgainstReference<double>(two_threads, 40, 100, 333, 10);
}

TEST(MatMulOpTest, HandlesZeroSizedDimensions) {
  KernelRunner runner;
  StatusOr<Tensor> empty_rows = runner.RunOne(
      "MatMul",
      {Tensor(DataType::kFloat, TensorShape({0, 3})), RandomTensor<float>(TensorShape({3, 4}), 1)});
  ASSERT_TRUE(empty_rows.ok()) << empty_rows.status();
  EXPECT_EQ(empty_rows->shape(), TensorShape({0, 4}));
  // K = 0: the product is all zeros.
  for (bool ta : {false, true}) {
    StatusOr<Tensor> zeros =
        runner.RunOne("MatMul",
                      {Tensor(DataType::kDouble, ta ? TensorShape({0, 2}) : TensorShape({2, 0})),
                       Tensor(DataType::kDouble, TensorShape({0, 3}))},
                      Transposes(ta, false));
    ASSERT_TRUE(zeros.ok()) << zeros.status();
    EXPECT_TENSOR_EQ(*zeros, Tensor::FromVector<double>({0, 0, 0, 0, 0, 0}, TensorShape({2, 3})));
  }
  StatusOr<Tensor> ints = runner.RunOne("MatMul", {Tensor(DataType::kInt32, TensorShape({1, 0})),
                                                   Tensor(DataType::kInt32, TensorShape({0, 2}))});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_TENSOR_EQ(*ints, Tensor::FromVector<int32_t>({0, 0}, TensorShape({1, 2})));
}

TEST(MatMulOpTest, RejectsMismatchedInnerDimensionsNamingTheNode) {
  KernelRunner runner;
  StatusOr<Tensor> c = runner.RunOne("MatMul", {RandomTensor<float>(TensorShape({3, 4}), 1),
                                                RandomTensor<float>(TensorShape({5, 6}), 2)});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(IsInvalidArgument(c.status()));
  EXPECT_EQ(c.status().message(),
            "node 'test_MatMul' (MatMul): inner dimensions must be equal, but are 4 and 5 for "
            "[3,4] x [5,6]");
  StatusOr<std::vector<Tensor>> k = testing::RunKernelOnly(
      "MatMul",
      {RandomTensor<float>(TensorShape({3, 4}), 1), RandomTensor<float>(TensorShape({5, 6}), 2)},
      {{"T", MakeAttrValue(DataType::kFloat)}});
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message(),
            "node 'k' (MatMul): inner dimensions must be equal, but are 4 and 5 for [3,4] x [5,6]");
  StatusOr<std::vector<Tensor>> rank = testing::RunKernelOnly(
      "MatMul",
      {RandomTensor<float>(TensorShape({3}), 1), RandomTensor<float>(TensorShape({3, 6}), 2)},
      {{"T", MakeAttrValue(DataType::kFloat)}});
  ASSERT_FALSE(rank.ok());
  EXPECT_TRUE(IsInvalidArgument(rank.status()));
  EXPECT_FALSE(runner
                   .RunOne("MatMul", {RandomTensor<float>(TensorShape({3}), 1),
                                      RandomTensor<float>(TensorShape({3, 6}), 2)})
                   .ok());
  EXPECT_FALSE(runner
                   .RunOne("MatMul", {Tensor::FromVector<uint8_t>({1}, TensorShape({1, 1})),
                                      Tensor::FromVector<uint8_t>({1}, TensorShape({1, 1}))})
                   .ok());
}

}  // namespace
}  // namespace weft::kernels

namespace weft::kernels {
namespace {

// _FusedMatMul (what graph/fuse_ops.h makes of MatMul -> BiasAdd -> Relu) against the three
// separate kernels, for both float types, each activation and a product split over threads.
template <typename T>
void CheckFusedMatMul(int64_t m, int64_t k, int64_t n, uint32_t seed) {
  KernelRunner runner;
  Tensor a = RandomTensor<T>(TensorShape({m, k}), seed, -1, 1);
  Tensor b = RandomTensor<T>(TensorShape({n, k}), seed + 1, -1, 1);
  Tensor bias = RandomTensor<T>(TensorShape({n}), seed + 2, -1, 1);
  auto attrs = Transposes(false, true);
  StatusOr<Tensor> product = runner.RunOne("MatMul", {a, b}, attrs);
  ASSERT_TRUE(product.ok()) << product.status();
  StatusOr<Tensor> biased = runner.RunOne("BiasAdd", {*product, bias});
  ASSERT_TRUE(biased.ok()) << biased.status();
  StatusOr<Tensor> activated = runner.RunOne("Relu", {*biased});
  ASSERT_TRUE(activated.ok()) << activated.status();
  for (const char* activation : {"None", "Relu"}) {
    SCOPED_TRACE(activation);
    auto fused_attrs = attrs;
    fused_attrs["activation"] = MakeAttrValue(std::string(activation));
    StatusOr<Tensor> fused = runner.RunOne("_FusedMatMul", {a, b, bias}, fused_attrs);
    ASSERT_TRUE(fused.ok()) << fused.status();
    EXPECT_TENSOR_EQ(*fused, std::string(activation) == "Relu" ? *activated : *biased);
  }
}

TEST(FusedMatMulOpTest, EqualsMatMulBiasAddRelu) {
  CheckFusedMatMul<float>(5, 7, 3, 1);
  CheckFusedMatMul<double>(5, 7, 3, 4);
  CheckFusedMatMul<float>(128, 784, 256, 7);  // split over the intra-op threads
}

TEST(FusedMatMulOpTest, ABiasOfTheWrongShapeNamesTheNode) {
  KernelRunner runner;
  auto attrs = Transposes(false, false);
  attrs["activation"] = MakeAttrValue(std::string("Relu"));
  StatusOr<Tensor> fused = runner.RunOne("_FusedMatMul",
                                         {RandomTensor<float>(TensorShape({2, 3}), 1, -1, 1),
                                          RandomTensor<float>(TensorShape({3, 4}), 2, -1, 1),
                                          RandomTensor<float>(TensorShape({3}), 3, -1, 1)},
                                         attrs);
  ASSERT_FALSE(fused.ok());
  EXPECT_TRUE(IsInvalidArgument(fused.status())) << fused.status();
  EXPECT_NE(fused.status().message().find("_FusedMatMul"), std::string::npos) << fused.status();
  EXPECT_NE(fused.status().message().find("bias must be a vector of 4 values"), std::string::npos)
      << fused.status();
}

}  // namespace
}  // namespace weft::kernels
