// Tests for MaxPool and MaxPoolGrad: hand-computed values (including ties and SAME padding), naive
// reference loops over many shapes and dtypes, central differences in float64, and error paths.
#include <algorithm>
#include <limits>

#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ExpectKernelError;
using testing::NumericGradient;
using testing::PoolAttrs;
using testing::RandomIntegers;
using testing::RandomTensor;
using testing::RunKernelOnly;
using testing::WeightedSum;
using weft::testing::KernelRunner;

struct PoolCase {
  TensorShape input;
  int64_t window_rows, window_cols, stride_rows, stride_cols;
  std::string padding;
};

void Window(int64_t in, int64_t window, int64_t stride, const std::string& padding, int64_t* out,
            int64_t* pad) {
  if (padding == "SAME") {
    *out = (in + stride - 1) / stride;
    *pad = std::max<int64_t>(0, (*out - 1) * stride + window - in) / 2;
  } else {
    *out = (in - window + stride) / stride;
    *pad = 0;
  }
}

// Naive MaxPool and MaxPoolGrad: for each output cell and channel, scan the window in row-major
// order keeping the first maximum; the gradient goes to that cell.
template <typename T>
void ReferencePool(const PoolCase& c, const Tensor& input, const Tensor* grad, Tensor* output,
                   Tensor* input_grad) {
  const int64_t n = c.input.dim_size(0), h = c.input.dim_size(1), w = c.input.dim_size(2),
                depth = c.input.dim_size(3);
  int64_t oh, ow, pad_top, pad_left;
  Window(h, c.window_rows, c.stride_rows, c.padding, &oh, &pad_top);
  Window(w, c.window_cols, c.stride_cols, c.padding, &ow, &pad_left);
  *output = Tensor(DataTypeToEnum<T>::value, TensorShape({n, oh, ow, depth}));
  *input_grad = Tensor(DataTypeToEnum<T>::value, c.input);
  std::fill(input_grad->flat<T>().begin(), input_grad->flat<T>().end(), T(0));
  const T* x = input.data<T>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t r = 0; r < oh; ++r) {
      for (int64_t col = 0; col < ow; ++col) {
        for (int64_t d = 0; d < depth; ++d) {
          int64_t best = -1;
          for (int64_t i = 0; i < c.window_rows; ++i) {
            for (int64_t j = 0; j < c.window_cols; ++j) {
              const int64_t in_r = r * c.stride_rows - pad_top + i;
              const int64_t in_c = col * c.stride_cols - pad_left + j;
              if (in_r < 0 || in_r >= h || in_c < 0 || in_c >= w) continue;
              const int64_t index = ((b * h + in_r) * w + in_c) * depth + d;
              if (best < 0 || x[index] > x[best]) best = index;
            }
          }
          const int64_t out_index = ((b * oh + r) * ow + col) * depth + d;
          output->data<T>()[out_index] = x[best];
          if (grad != nullptr) input_grad->data<T>()[best] += grad->data<T>()[out_index];
        }
      }
    }
  }
}

template <typename T>
void CheckAgainstReference(const PoolCase& c, uint32_t seed) {
  SCOPED_TRACE(StrCat("input ", c.input, " window ", c.window_rows, "x", c.window_cols, " strides ",
                      c.stride_rows, "x", c.stride_cols, " ", c.padding));
  // Integer-valued inputs in a small range, so windows often hold ties.
  Tensor input = RandomIntegers<T>(c.input, seed, -3, 3);
  Tensor expected_output, unused;
  ReferencePool<T>(c, input, nullptr, &expected_output, &unused);
  Tensor grad = RandomIntegers<T>(expected_output.shape(), seed + 1, -9, 9);
  Tensor expected_grad;
  ReferencePool<T>(c, input, &grad, &expected_output, &expected_grad);
  KernelRunner runner;
  AttrMap attrs = PoolAttrs(c.window_rows, c.window_cols, c.stride_rows, c.stride_cols, c.padding);
  StatusOr<Tensor> output = runner.RunOne("MaxPool", {input}, attrs);
  ASSERT_TRUE(output.ok()) << output.status();
  EXPECT_TENSOR_EQ(*output, expected_output);
  StatusOr<Tensor> input_grad = runner.RunOne("MaxPoolGrad", {input, *output, grad}, attrs);
  ASSERT_TRUE(input_grad.ok()) << input_grad.status();
  EXPECT_TENSOR_EQ(*input_grad, expected_grad);
}

const std::vector<PoolCase>& Cases() {
  static const std::vector<PoolCase> cases = {
      {{1, 4, 4, 1}, 2, 2, 2, 2, "VALID"},
      {{2, 5, 7, 3}, 2, 2, 2, 2, "SAME"},
      {{2, 5, 7, 3}, 3, 3, 2, 2, "VALID"},
      {{3, 6, 6, 2}, 3, 3, 1, 1, "SAME"},
      {{1, 7, 5, 4}, 3, 2, 2, 1, "SAME"},
      {{2, 4, 4, 2}, 1, 1, 2, 2, "VALID"},
      {{1, 3, 3, 1}, 5, 5, 1, 1, "SAME"},
      {{2, 2, 3, 2}, 3, 3, 1, 1, "VALID"},
      {{0, 4, 4, 2}, 2, 2, 2, 2, "SAME"},
      {{2, 4, 4, 0}, 2, 2, 2, 2, "SAME"},
      {{4, 28, 28, 32}, 2, 2, 2, 2, "SAME"},
      {{2, 9, 11, 5}, 4, 3, 3, 4, "SAME"},
      // Windows that do not overlap but leave cells no window reads (strides past the window, a
      // VALID tail).
      {{1, 7, 8, 2}, 2, 2, 3, 3, "VALID"},
      {{2, 5, 7, 3}, 2, 2, 2, 2, "VALID"},
      {{1, 6, 6, 3}, 2, 3, 3, 3, "SAME"},
  };
  return cases;
}

// _FusedMaxPoolGrad (graph/fuse_ops.h's MaxPoolGrad -> ReluGrad) against the two kernels, with
// ties, zeros and negative inputs, overlapping windows or not.
TEST(MaxPoolTest, FusedGradEqualsReluGradOfMaxPoolGrad) {
  KernelRunner runner;
  uint32_t seed = 500;
  for (const PoolCase& c : Cases()) {
    SCOPED_TRACE(StrCat("input ", c.input, " window ", c.window_rows, "x", c.window_cols,
                        " strides ", c.stride_rows, "x", c.stride_cols, " ", c.padding));
    Tensor input = RandomIntegers<float>(c.input, seed += 2, -3, 3);
    AttrMap attrs =
        PoolAttrs(c.window_rows, c.window_cols, c.stride_rows, c.stride_cols, c.padding);
    StatusOr<Tensor> pooled = runner.RunOne("MaxPool", {input}, attrs);
    ASSERT_TRUE(pooled.ok()) << pooled.status();
    Tensor grad = RandomIntegers<float>(pooled->shape(), seed + 1, -9, 9);
    StatusOr<Tensor> pool_grad = runner.RunOne("MaxPoolGrad", {input, *pooled, grad}, attrs);
    ASSERT_TRUE(pool_grad.ok()) << pool_grad.status();
    StatusOr<Tensor> expected = runner.RunOne("ReluGrad", {*pool_grad, input});
    ASSERT_TRUE(expected.ok()) << expected.status();
    StatusOr<Tensor> fused = runner.RunOne("_FusedMaxPoolGrad", {input, *pooled, grad}, attrs);
    ASSERT_TRUE(fused.ok()) << fused.status();
    EXPECT_TENSOR_EQ(*fused, *expected);
  }
}

TEST(MaxPoolTest, HandComputed) {
  Tensor input = Tensor::FromVector<float>({1, 2, 5, 3,  //
                                            4, 0, 6, 1,  //
                                            7, 7, 2, 2,  //
                                            1, 7, 2, 9},
                                           TensorShape({1, 4, 4, 1}));
  KernelRunner runner;
  AttrMap attrs = PoolAttrs(2, 2, 2, 2, "VALID");
  StatusOr<Tensor> out = runner.RunOne("MaxPool", {input}, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TENSOR_EQ(*out, Tensor::FromVector<float>({4, 6, 7, 9}, TensorShape({1, 2, 2, 1})));
  // The bottom-left window holds 7 three times: the first (row-major) gets the gradient.
  Tensor grad = Tensor::FromVector<float>({10, 20, 30, 40}, TensorShape({1, 2, 2, 1}));
  StatusOr<Tensor> dx = runner.RunOne("MaxPoolGrad", {input, *out, grad}, attrs);
  ASSERT_TRUE(dx.ok()) << dx.status();
  EXPECT_TENSOR_EQ(*dx, Tensor::FromVector<float>({0, 0, 0, 0,    //
                                                   10, 0, 20, 0,  //
                                                   30, 0, 0, 0,   //
                                                   0, 0, 0, 40},
                                                  TensorShape({1, 4, 4, 1})));
}

// A NaN in a window's first cell stays that window's maximum (no value compares greater), so the
// first cell takes the gradient; a NaN elsewhere loses to the first cell. Both window layouts.
TEST(MaxPoolTest, GradOfANaNWindowGoesToItsFirstCell) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor input = Tensor::FromVector<float>({nan, 2, 1, nan,  //
                                            3, 4, 5, 6},
                                           TensorShape({1, 2, 4, 1}));
  KernelRunner runner;
  for (int stride : {2, 1}) {
    SCOPED_TRACE(StrCat("stride ", stride));
    AttrMap attrs = PoolAttrs(2, 2, stride, stride, "VALID");
    StatusOr<Tensor> out = runner.RunOne("MaxPool", {input}, attrs);
    ASSERT_TRUE(out.ok()) << out.status();
    Tensor grad(DataType::kFloat, out->shape());
    for (float& v : grad.flat<float>()) v = 1;
    StatusOr<Tensor> dx = runner.RunOne("MaxPoolGrad", {input, *out, grad}, attrs);
    ASSERT_TRUE(dx.ok()) << dx.status();
    // Stride 2: windows {nan,2,3,4} and {1,nan,5,6}. Stride 1 adds {2,1,4,5}.
    const std::vector<float> expected = stride == 2 ? std::vector<float>{1, 0, 0, 0, 0, 0, 0, 1}
                                                    : std::vector<float>{1, 0, 0, 0, 0, 0, 1, 1};
    EXPECT_TENSOR_EQ(*dx, Tensor::FromVector<float>(expected, TensorShape({1, 2, 4, 1})));
  }
}

TEST(MaxPoolTest, SamePaddingIgnoresPaddedCells) {
  // All values negative: a padded zero must never win. 3x3 input, 2x2 window, stride 2, SAME
  // gives 2x2 output, padding one row/col at the bottom/right.
  Tensor input =
      Tensor::FromVector<double>({-1, -2, -3, -4, -5, -6, -7, -8, -9}, TensorShape({1, 3, 3, 1}));
  KernelRunner runner;
  StatusOr<Tensor> out = runner.RunOne("MaxPool", {input}, PoolAttrs(2, 2, 2, 2, "SAME"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TENSOR_EQ(*out, Tensor::FromVector<double>({-1, -3, -7, -9}, TensorShape({1, 2, 2, 1})));
}

TEST(MaxPoolTest, MatchesReferenceForEveryDtype) {
  uint32_t seed = 1;
  for (const PoolCase& c : Cases()) {
    CheckAgainstReference<float>(c, seed += 2);
    CheckAgainstReference<double>(c, seed += 2);
    CheckAgainstReference<int32_t>(c, seed += 2);
    CheckAgainstReference<int64_t>(c, seed += 2);
  }
}

TEST(MaxPoolTest, GradMatchesNumericGradient) {
  // Distinct random values, so the maximum is locally constant and differentiable.
  for (const PoolCase& c :
       {PoolCase{{2, 5, 6, 2}, 3, 3, 2, 2, "SAME"}, PoolCase{{1, 6, 5, 3}, 2, 3, 1, 2, "VALID"}}) {
    Tensor input = RandomTensor<double>(c.input, 5);
    AttrMap attrs =
        PoolAttrs(c.window_rows, c.window_cols, c.stride_rows, c.stride_cols, c.padding);
    KernelRunner runner;
    StatusOr<Tensor> out = runner.RunOne("MaxPool", {input}, attrs);
    ASSERT_TRUE(out.ok()) << out.status();
    Tensor weights = RandomTensor<double>(out->shape(), 6);
    Tensor numeric = NumericGradient(
        [&](const Tensor& x) {
          StatusOr<Tensor> y = runner.RunOne("MaxPool", {x}, attrs);
          return y.ok() ? WeightedSum(*y, weights) : 0.0;
        },
        input, 1e-7);
    StatusOr<Tensor> dx = runner.RunOne("MaxPoolGrad", {input, *out, weights}, attrs);
    ASSERT_TRUE(dx.ok()) << dx.status();
    EXPECT_TENSOR_NEAR(*dx, numeric, 1e-6, 1e-6);
  }
}

TEST(MaxPoolTest, ErrorsNameTheNode) {
  KernelRunner runner;
  Tensor input = RandomTensor<float>({1, 4, 4, 2}, 1);
  AttrMap attrs = PoolAttrs(2, 2, 2, 2, "VALID");
  attrs["ksize"] = MakeAttrValue(std::vector<int64_t>{1, 2, 2});
  ExpectKernelError(runner.RunOne("MaxPool", {input}, attrs).status(), "MaxPool",
                    "ksize must have 4 elements");
  attrs["ksize"] = MakeAttrValue(std::vector<int64_t>{1, 2, 2, 2});
  ExpectKernelError(runner.RunOne("MaxPool", {input}, attrs).status(), "MaxPool",
                    "ksize must be 1 in the batch and channel dimensions");
  attrs = PoolAttrs(2, 2, 0, 2, "VALID");
  ExpectKernelError(runner.RunOne("MaxPool", {input}, attrs).status(), "MaxPool",
                    "strides must be positive");
  ExpectKernelError(
      runner.RunOne("MaxPool", {RandomTensor<float>({4, 4, 2}, 1)}, PoolAttrs(2, 2, 2, 2, "SAME"))
          .status(),
      "MaxPool", "rank 4");
  ExpectKernelError(
      runner
          .RunOne("MaxPool", {RandomTensor<float>({1, 2, 2, 1}, 1)}, PoolAttrs(5, 5, 1, 1, "VALID"))
          .status(),
      "MaxPool", "computed output size would be negative");
  attrs = PoolAttrs(2, 2, 2, 2, "VALID");
  ExpectKernelError(runner
                        .RunOne("MaxPoolGrad",
                                {input, RandomTensor<float>({1, 2, 2, 2}, 2),
                                 RandomTensor<float>({1, 2, 3, 2}, 3)},
                                attrs)
                        .status(),
                    "MaxPoolGrad", "grad has shape [1,2,3,2]");
}

TEST(MaxPoolTest, KernelChecksShapesWithoutShapeInference) {
  AttrMap attrs = PoolAttrs(2, 2, 2, 2, "VALID");
  attrs["T"] = MakeAttrValue(DataType::kFloat);
  ExpectKernelError(RunKernelOnly("MaxPool", {RandomTensor<float>({4, 4, 2}, 1)}, attrs).status(),
                    "MaxPool", "input must be rank 4");
  ExpectKernelError(
      RunKernelOnly("MaxPoolGrad",
                    {RandomTensor<float>({1, 4, 4, 2}, 1), RandomTensor<float>({1, 2, 2, 2}, 2),
                     RandomTensor<float>({1, 2, 3, 2}, 3)},
                    attrs)
          .status(),
      "MaxPoolGrad", "must both have shape [1,2,2,2]");
}

}  // namespace
}  // namespace weft::kernels
