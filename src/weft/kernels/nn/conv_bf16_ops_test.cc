// Conv2D, _FusedConv2D and both Conv2D gradients on bfloat16, against the float32 kernels on the
// same (bfloat16-exact) values, on oneDNN's bfloat16 path where the CPU has one and on the float32
// fallback always: each output within a rounding of bfloat16 (2^-8 relative) plus float32
// accumulation error, which scales with the sum of the magnitudes multiplied.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "weft/core/bfloat16.h"
#include "weft/kernels/gemm_bf16.h"
#include "weft/kernels/testing/bfloat16_test_util.h"
#include "weft/kernels/testing/nn_test_util.h"
#include "weft/testing/kernel_runner.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ConvAttrs;
using testing::RandomBFloat16;
using testing::ScopedBFloat16Fallback;
using testing::Sizes;
using testing::Widened;
using weft::testing::KernelRunner;

// Every element of `got` (bfloat16) within a bfloat16 rounding of `want` (float32, of the same
// values) plus `slack` (the float32 sums' own error, relative to their terms' magnitude).
void ExpectWithinRounding(const Tensor& got, const Tensor& want, double slack) {
  ASSERT_EQ(got.dtype(), DataType::kBFloat16);
  ASSERT_EQ(got.shape(), want.shape());
  const Tensor wide = Widened(got);
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    const double w = want.data<float>()[i];
    ASSERT_LE(std::fabs(wide.data<float>()[i] - w), std::ldexp(std::fabs(w), -8) + slack)
        << "element " << i << " of " << want.shape().DebugString();
  }
}

struct Case {
  TensorShape input, filter;
  int64_t stride;
  std::string padding;
};

// W2's two convolutions, a strided VALID one and a 1x1.
const Case kCases[] = {
    {{4, 28, 28, 1}, {3, 3, 1, 32}, 1, "SAME"},
    {{4, 14, 14, 32}, {3, 3, 32, 64}, 1, "SAME"},
    {{3, 11, 9, 5}, {3, 2, 5, 7}, 2, "VALID"},
    {{2, 6, 6, 16}, {1, 1, 16, 8}, 1, "VALID"},
};

void CheckEveryPass(bool force_fallback) {
  ScopedBFloat16Fallback fallback(force_fallback);
  KernelRunner runner;
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    SCOPED_TRACE(::testing::Message() << "input " << c.input.DebugString() << " filter "
                                      << c.filter.DebugString() << " fallback " << force_fallback);
    const AttrMap attrs = ConvAttrs(c.stride, c.stride, c.padding);
    const Tensor x = RandomBFloat16(c.input, seed++, 1);
    const Tensor f = RandomBFloat16(c.filter, seed++, 1);
    const double patch =
        static_cast<double>(c.filter.dim_size(0) * c.filter.dim_size(1) * c.filter.dim_size(2));
    StatusOr<Tensor> y = runner.RunOne("Conv2D", {x, f}, attrs);
    ASSERT_TRUE(y.ok()) << y.status();
    StatusOr<Tensor> y32 = runner.RunOne("Conv2D", {Widened(x), Widened(f)}, attrs);
    ASSERT_TRUE(y32.ok()) << y32.status();
    ExpectWithinRounding(*y, *y32, 1e-5 * patch);

    // Fused bias and ReLU: the bias rounded to bfloat16 like the operands.
    const Tensor bias = RandomBFloat16(TensorShape({c.filter.dim_size(3)}), seed++, 1);
    AttrMap fused_attrs = attrs;
    fused_attrs["activation"] = MakeAttrValue(std::string("Relu"));
    StatusOr<Tensor> fused = runner.RunOne("_FusedConv2D", {x, f, bias}, fused_attrs);
    ASSERT_TRUE(fused.ok()) << fused.status();
    StatusOr<Tensor> fused32 =
        runner.RunOne("_FusedConv2D", {Widened(x), Widened(f), Widened(bias)}, fused_attrs);
    ASSERT_TRUE(fused32.ok()) << fused32.status();
    ExpectWithinRounding(*fused, *fused32, 1e-5 * patch);

    const Tensor dy = RandomBFloat16(y->shape(), seed++, 1);
    StatusOr<Tensor> dx = runner.RunOne("Conv2DBackpropInput", {Sizes(c.input), f, dy}, attrs);
    ASSERT_TRUE(dx.ok()) << dx.status();
    StatusOr<Tensor> dx32 =
        runner.RunOne("Conv2DBackpropInput", {Sizes(c.input), Widened(f), Widened(dy)}, attrs);
    ASSERT_TRUE(dx32.ok()) << dx32.status();
    ExpectWithinRounding(*dx, *dx32, 1e-5 * static_cast<double>(c.filter.num_elements()));

    // The filter gradient sums over every output pixel of the batch.
    StatusOr<Tensor> df = runner.RunOne("Conv2DBackpropFilter", {x, Sizes(c.filter), dy}, attrs);
    ASSERT_TRUE(df.ok()) << df.status();
    StatusOr<Tensor> df32 =
        runner.RunOne("Conv2DBackpropFilter", {Widened(x), Sizes(c.filter), Widened(dy)}, attrs);
    ASSERT_TRUE(df32.ok()) << df32.status();
    ExpectWithinRounding(*df, *df32, 1e-5 * static_cast<double>(y->NumElements()));
  }
}

TEST(ConvBFloat16Test, EveryPassMatchesFloat32OnThisCpusPath) {
  std::cout << "bfloat16 convolutions on this CPU: "
            << (BFloat16GemmIsNative() ? "oneDNN bf16" : "float32") << "\n";
  CheckEveryPass(false);
}

TEST(ConvBFloat16Test, EveryPassMatchesFloat32OnTheFallback) { CheckEveryPass(true); }

TEST(ConvBFloat16Test, BadShapesAreNamedAsForFloat32) {
  KernelRunner runner;
  const AttrMap attrs = ConvAttrs(1, 1, "SAME");
  StatusOr<Tensor> y = runner.RunOne(
      "Conv2D",
      {RandomBFloat16(TensorShape({1, 4, 4, 3}), 1), RandomBFloat16(TensorShape({2, 2, 5, 4}), 2)},
      attrs);
  ASSERT_FALSE(y.ok());
  EXPECT_TRUE(IsInvalidArgument(y.status())) << y.status();
  // Empty batches give empty outputs on every pass.
  StatusOr<Tensor> empty = runner.RunOne(
      "Conv2D",
      {RandomBFloat16(TensorShape({0, 4, 4, 3}), 1), RandomBFloat16(TensorShape({2, 2, 3, 4}), 2)},
      attrs);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), TensorShape({0, 4, 4, 4}));
  StatusOr<Tensor> df =
      runner.RunOne("Conv2DBackpropFilter",
                    {RandomBFloat16(TensorShape({0, 4, 4, 3}), 1), Sizes(TensorShape({2, 2, 3, 4})),
                     RandomBFloat16(TensorShape({0, 4, 4, 4}), 3)},
                    attrs);
  ASSERT_TRUE(df.ok()) << df.status();
  for (const bfloat16& v : df->flat<bfloat16>()) EXPECT_EQ(static_cast<float>(v), 0.0f);
}

}  // namespace
}  // namespace weft::kernels
