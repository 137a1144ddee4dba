// Tests for MatMul on bfloat16: every transpose combination at several shapes (some large enough to
// split over the intra-op threads by rows, some by columns) against a float64 reference and against
// the float32 MatMul of the same inputs, on oneDNN's bfloat16 path where the CPU has one and on the
// float32 fallback always; BatchMatMulV2 on bfloat16 against its float32 kernel.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "weft/kernels/gemm_bf16.h"
#include "weft/kernels/testing/bfloat16_test_util.h"
#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomBFloat16;
using testing::ScopedBFloat16Fallback;
using testing::Widened;
using weft::testing::KernelRunner;

std::map<std::string, proto::AttrValue> Transposes(bool a, bool b) {
  return {{"transpose_a", MakeAttrValue(a)}, {"transpose_b", MakeAttrValue(b)}};
}

// Each element of `c` (bfloat16) against the float64 product of the same bfloat16 inputs: within
// bfloat16's rounding of the result (2^-8 relative) plus float32 accumulation error, which scales
// with the sum of |a||b| rather than with the result (the sum may cancel).
void ExpectNearReference(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& c) {
  const int64_t m = c.dim_size(0), n = c.dim_size(1);
  const int64_t k = ta ? a.dim_size(0) : a.dim_size(1);
  const bfloat16* av = a.data<bfloat16>();
  const bfloat16* bv = b.data<bfloat16>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = static_cast<double>(ta ? av[p * m + i] : av[i * k + p]);
        const double y = static_cast<double>(tb ? bv[j * k + p] : bv[p * n + j]);
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      const double got = static_cast<double>(c.data<bfloat16>()[i * n + j]);
      ASSERT_LE(std::fabs(got - sum), std::ldexp(std::fabs(sum), -8) + 1e-5 * magnitude)
          << "element [" << i << "," << j << "] of " << m << "x" << k << "x" << n << " ta " << ta
          << " tb " << tb;
    }
  }
}

void CheckShapes(bool force_fallback) {
  ScopedBFloat16Fallback fallback(force_fallback);
  if (force_fallback) {
    EXPECT_FALSE(BFloat16GemmIsNative());
  }
  KernelRunner runner;
  struct Shape {
    int64_t m, k, n;
  };
  // The last two exceed the parallel threshold (2^20 multiply-adds): split by rows, then columns.
  for (const Shape& s : {Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{17, 33, 9}, Shape{64, 128, 48},
                         Shape{200, 96, 80}, Shape{24, 160, 300}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << s.m << "x" << s.k << "x" << s.n << " ta " << ta
                                          << " tb " << tb << " fallback " << force_fallback);
        const Tensor a = RandomBFloat16(ta ? TensorShape({s.k, s.m}) : TensorShape({s.m, s.k}), 7);
        const Tensor b = RandomBFloat16(tb ? TensorShape({s.n, s.k}) : TensorShape({s.k, s.n}), 8);
        StatusOr<Tensor> c = runner.RunOne("MatMul", {a, b}, Transposes(ta, tb));
        ASSERT_TRUE(c.ok()) << c.status();
        ASSERT_EQ(c->dtype(), DataType::kBFloat16);
        ASSERT_EQ(c->shape(), TensorShape({s.m, s.n}));
        ExpectNearReference(a, b, ta, tb, *c);
        // The float32 product of the same (bfloat16-exact) inputs, to bfloat16's tolerance.
        StatusOr<Tensor> c32 =
            runner.RunOne("MatMul", {Widened(a), Widened(b)}, Transposes(ta, tb));
        ASSERT_TRUE(c32.ok()) << c32.status();
        EXPECT_TENSOR_NEAR(Widened(*c), *c32, 1e-2, 1e-2);
      }
    }
  }
}

TEST(MatMulBFloat16Test, MatchesTheReferenceOnThisCpusPath) {
  // Says which path this CPU takes; both are checked either way.
  std::cout << "bfloat16 GEMM on this CPU: " << (BFloat16GemmIsNative() ? "oneDNN bf16" : "float32")
            << "\n";
  CheckShapes(false);
}

TEST(MatMulBFloat16Test, MatchesTheReferenceOnTheFloat32Fallback) { CheckShapes(true); }

TEST(MatMulBFloat16Test, BothPathsAgreeToARoundingOfTheResult) {
  KernelRunner runner;
  const Tensor a = RandomBFloat16(TensorShape({48, 200}), 3);
  const Tensor b = RandomBFloat16(TensorShape({200, 40}), 4);
  StatusOr<Tensor> native = runner.RunOne("MatMul", {a, b});
  ASSERT_TRUE(native.ok()) << native.status();
  StatusOr<Tensor> fallback = [&] {
    ScopedBFloat16Fallback force(true);
    return runner.RunOne("MatMul", {a, b});
  }();
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  // Both round a float32 sum once; summation order may move it by an ulp of bfloat16.
  EXPECT_TENSOR_NEAR(Widened(*native), Widened(*fallback), 1e-3, 1e-2);
}

// _FusedBFloat16MatMul's bias and ReLU, applied by oneDNN's epilogue on this CPU's path and by a
// pass after the product on the fallback: each element against the float64 sum of the same
// bfloat16 inputs plus the bias, at shapes that run whole, split by rows and split by columns
// (each block then takes its own columns' bias).
TEST(MatMulBFloat16Test, FusedBiasAndReluMatchTheReferenceOnBothPaths) {
  KernelRunner runner;
  struct Shape {
    int64_t m, k, n;
  };
  for (bool force_fallback : {false, true}) {
    ScopedBFloat16Fallback fallback(force_fallback);
    for (const Shape& s : {Shape{3, 5, 7}, Shape{200, 96, 80}, Shape{24, 160, 300}}) {
      for (bool tb : {false, true}) {
        for (const char* activation : {"None", "Relu"}) {
          SCOPED_TRACE(::testing::Message() << s.m << "x" << s.k << "x" << s.n << " tb " << tb
                                            << " " << activation << " fallback " << force_fallback);
          const Tensor a = RandomBFloat16(TensorShape({s.m, s.k}), 17);
          const Tensor b =
              RandomBFloat16(tb ? TensorShape({s.n, s.k}) : TensorShape({s.k, s.n}), 18);
          Tensor bias = Widened(RandomBFloat16(TensorShape({s.n}), 19));
          std::map<std::string, proto::AttrValue> attrs = Transposes(false, tb);
          attrs["num_bias"] = MakeAttrValue(int64_t{1});
          attrs["activation"] = MakeAttrValue(std::string(activation));
          StatusOr<Tensor> c = runner.RunOne("_FusedBFloat16MatMul", {a, b, bias}, attrs);
          ASSERT_TRUE(c.ok()) << c.status();
          ASSERT_EQ(c->dtype(), DataType::kFloat);
          ASSERT_EQ(c->shape(), TensorShape({s.m, s.n}));
          const bfloat16* av = a.data<bfloat16>();
          const bfloat16* bv = b.data<bfloat16>();
          for (int64_t i = 0; i < s.m; ++i) {
            for (int64_t j = 0; j < s.n; ++j) {
              double sum = bias.data<float>()[j], magnitude = std::fabs(sum);
              for (int64_t p = 0; p < s.k; ++p) {
                const double x = static_cast<double>(av[i * s.k + p]);
                const double y = static_cast<double>(tb ? bv[j * s.k + p] : bv[p * s.n + j]);
                sum += x * y;
                magnitude += std::fabs(x * y);
              }
              if (std::string(activation) == "Relu") sum = std::max(sum, 0.0);
              const double got = c->data<float>()[i * s.n + j];
              ASSERT_LE(std::fabs(got - sum), 1e-5 * magnitude + 1e-6)
                  << "element [" << i << "," << j << "]";
            }
          }
        }
      }
    }
  }
}

// BatchMatMulV2 on bfloat16 against the float32 kernel on the same inputs: a broadcast batch of
// small products (split over the batch) and one large product (split itself).
TEST(MatMulBFloat16Test, BatchMatMulMatchesFloat32OnBothPaths) {
  struct Case {
    TensorShape x, y;
    bool adj_x, adj_y;
  };
  for (bool force : {false, true}) {
    ScopedBFloat16Fallback fallback(force);
    KernelRunner runner;
    for (const Case& c :
         {Case{TensorShape({2, 3, 5, 7}), TensorShape({7, 4}), false, false},
          Case{TensorShape({3, 7, 5}), TensorShape({2, 1, 4, 7}), true, true},
          Case{TensorShape({1, 160, 96}), TensorShape({1, 128, 96}), false, true}}) {
      SCOPED_TRACE(::testing::Message() << c.x << " x " << c.y << " fallback " << force);
      const Tensor x = RandomBFloat16(c.x, 5), y = RandomBFloat16(c.y, 6);
      const std::map<std::string, proto::AttrValue> attrs = {{"adj_x", MakeAttrValue(c.adj_x)},
                                                             {"adj_y", MakeAttrValue(c.adj_y)}};
      StatusOr<Tensor> z = runner.RunOne("BatchMatMulV2", {x, y}, attrs);
      ASSERT_TRUE(z.ok()) << z.status();
      ASSERT_EQ(z->dtype(), DataType::kBFloat16);
      StatusOr<Tensor> z32 = runner.RunOne("BatchMatMulV2", {Widened(x), Widened(y)}, attrs);
      ASSERT_TRUE(z32.ok()) << z32.status();
      EXPECT_TENSOR_NEAR(Widened(*z), *z32, 2e-2, 1e-2);
    }
  }
}

TEST(MatMulBFloat16Test, EmptyAndZeroInnerDimensions) {
  for (bool force : {false, true}) {
    ScopedBFloat16Fallback fallback(force);
    KernelRunner runner;
    StatusOr<Tensor> zeros = runner.RunOne(
        "MatMul", {RandomBFloat16(TensorShape({3, 0}), 1), RandomBFloat16(TensorShape({0, 2}), 2)});
    ASSERT_TRUE(zeros.ok()) << zeros.status();
    EXPECT_TENSOR_EQ(Widened(*zeros),
                     Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, TensorShape({3, 2})));
    StatusOr<Tensor> empty = runner.RunOne(
        "MatMul", {RandomBFloat16(TensorShape({0, 4}), 1), RandomBFloat16(TensorShape({4, 2}), 2)});
    ASSERT_TRUE(empty.ok()) << empty.status();
    EXPECT_EQ(empty->shape(), TensorShape({0, 2}));
  }
}

TEST(MatMulBFloat16Test, MismatchedInnerDimensionsNameTheNode) {
  KernelRunner runner;
  StatusOr<std::vector<Tensor>> c = runner.RunKernelOnly(
      "MatMul", {RandomBFloat16(TensorShape({2, 3}), 1), RandomBFloat16(TensorShape({4, 2}), 2)});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(IsInvalidArgument(c.status())) << c.status();
  EXPECT_NE(c.status().message().find("test_MatMul"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace weft::kernels
