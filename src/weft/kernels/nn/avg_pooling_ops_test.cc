// Tests for AvgPool and AvgPoolGrad: hand-computed values (SAME edges average fewer cells), naive
// reference loops over many shapes in float32 and float64, central differences in float64, and
// error paths.
#include <algorithm>

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
using testing::Sizes;
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

// Naive AvgPool and AvgPoolGrad: for each output cell and channel, the mean over the window's
// cells inside the image; the gradient adds grad / (that count) to each of those cells.
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
          std::vector<int64_t> cells;
          for (int64_t i = 0; i < c.window_rows; ++i) {
            for (int64_t j = 0; j < c.window_cols; ++j) {
              const int64_t in_r = r * c.stride_rows - pad_top + i;
              const int64_t in_c = col * c.stride_cols - pad_left + j;
              if (in_r < 0 || in_r >= h || in_c < 0 || in_c >= w) continue;
              cells.push_back(((b * h + in_r) * w + in_c) * depth + d);
            }
          }
          double sum = 0;
          for (int64_t cell : cells) sum += static_cast<double>(x[cell]);
          const int64_t out_index = ((b * oh + r) * ow + col) * depth + d;
          output->data<T>()[out_index] = static_cast<T>(sum / static_cast<double>(cells.size()));
          if (grad == nullptr) continue;
          for (int64_t cell : cells) {
            input_grad->data<T>()[cell] +=
                grad->data<T>()[out_index] / static_cast<T>(cells.size());
          }
        }
      }
    }
  }
}

template <typename T>
void CheckAgainstReference(const PoolCase& c, uint32_t seed, double tolerance) {
  SCOPED_TRACE(StrCat("input ", c.input, " window ", c.window_rows, "x", c.window_cols, " strides ",
                      c.stride_rows, "x", c.stride_cols, " ", c.padding));
  Tensor input = RandomTensor<T>(c.input, seed, -3, 3);
  Tensor expected_output, unused;
  ReferencePool<T>(c, input, nullptr, &expected_output, &unused);
  Tensor grad = RandomTensor<T>(expected_output.shape(), seed + 1, -9, 9);
  Tensor expected_grad;
  ReferencePool<T>(c, input, &grad, &expected_output, &expected_grad);
  KernelRunner runner;
  AttrMap attrs = PoolAttrs(c.window_rows, c.window_cols, c.stride_rows, c.stride_cols, c.padding);
  StatusOr<Tensor> output = runner.RunOne("AvgPool", {input}, attrs);
  ASSERT_TRUE(output.ok()) << output.status();
  EXPECT_TENSOR_NEAR(*output, expected_output, tolerance, tolerance);
  StatusOr<Tensor> input_grad = runner.RunOne("AvgPoolGrad", {Sizes(c.input), grad}, attrs);
  ASSERT_TRUE(input_grad.ok()) << input_grad.status();
  EXPECT_TENSOR_NEAR(*input_grad, expected_grad, tolerance, tolerance);
}

TEST(AvgPoolTest, HandComputed) {
  Tensor input = Tensor::FromVector<float>({1, 2, 5, 3,  //
                                            4, 0, 6, 1,  //
                                            7, 7, 2, 2,  //
                                            1, 7, 2, 9},
                                           TensorShape({1, 4, 4, 1}));
  KernelRunner runner;
  AttrMap attrs = PoolAttrs(2, 2, 2, 2, "VALID");
  StatusOr<Tensor> out = runner.RunOne("AvgPool", {input}, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TENSOR_EQ(
      *out, Tensor::FromVector<float>({1.75f, 3.75f, 5.5f, 3.75f}, TensorShape({1, 2, 2, 1})));
  Tensor grad = Tensor::FromVector<float>({4, 8, 12, 16}, TensorShape({1, 2, 2, 1}));
  StatusOr<Tensor> dx = runner.RunOne("AvgPoolGrad", {Sizes(input.shape()), grad}, attrs);
  ASSERT_TRUE(dx.ok()) << dx.status();
  EXPECT_TENSOR_EQ(*dx, Tensor::FromVector<float>({1, 1, 2, 2,  //
                                                   1, 1, 2, 2,  //
                                                   3, 3, 4, 4,  //
                                                   3, 3, 4, 4},
                                                  TensorShape({1, 4, 4, 1})));
}

TEST(AvgPoolTest, SameEdgeWindowsAverageOnlyTheirCellsInsideTheImage) {
  // 3x3 input, 2x2 window, stride 2, SAME: 2x2 output, padding one row and column at the
  // bottom/right. The corner window holds one real cell: its mean is that cell, not cell / 4.
  Tensor input = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, TensorShape({1, 3, 3, 1}));
  KernelRunner runner;
  AttrMap attrs = PoolAttrs(2, 2, 2, 2, "SAME");
  StatusOr<Tensor> out = runner.RunOne("AvgPool", {input}, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TENSOR_EQ(*out, Tensor::FromVector<double>({3, 4.5, 7.5, 9}, TensorShape({1, 2, 2, 1})));
  Tensor grad = Tensor::FromVector<double>({4, 2, 2, 1}, TensorShape({1, 2, 2, 1}));
  StatusOr<Tensor> dx = runner.RunOne("AvgPoolGrad", {Sizes(input.shape()), grad}, attrs);
  ASSERT_TRUE(dx.ok()) << dx.status();
  EXPECT_TENSOR_EQ(
      *dx, Tensor::FromVector<double>({1, 1, 1, 1, 1, 1, 1, 1, 1}, TensorShape({1, 3, 3, 1})));
}

const std::vector<PoolCase>& Cases() {
  static const std::vector<PoolCase> cases = {
      {{1, 4, 4, 1}, 2, 2, 2, 2, "VALID"},   {{2, 5, 7, 3}, 2, 2, 2, 2, "SAME"},
      {{2, 5, 7, 3}, 3, 3, 2, 2, "VALID"},   {{3, 6, 6, 2}, 3, 3, 1, 1, "SAME"},
      {{1, 7, 5, 4}, 3, 2, 2, 1, "SAME"},    {{2, 4, 4, 2}, 1, 1, 2, 2, "VALID"},
      {{1, 3, 3, 1}, 5, 5, 1, 1, "SAME"},    {{2, 2, 3, 2}, 3, 3, 1, 1, "VALID"},
      {{0, 4, 4, 2}, 2, 2, 2, 2, "SAME"},    {{2, 4, 4, 0}, 2, 2, 2, 2, "SAME"},
      {{1, 7, 8, 2}, 2, 2, 3, 3, "VALID"},  // strides past the window: cells no window reads
      {{1, 2, 2, 1}, 3, 3, 2, 2, "VALID"},  // an empty output: the gradient is all zeros
      {{4, 28, 28, 32}, 2, 2, 2, 2, "SAME"}, {{2, 9, 11, 5}, 4, 3, 3, 4, "SAME"},
  };
  return cases;
}

TEST(AvgPoolTest, MatchesReference) {
  uint32_t seed = 1;
  for (const PoolCase& c : Cases()) {
    CheckAgainstReference<float>(c, seed += 2, 1e-5);
    CheckAgainstReference<double>(c, seed += 2, 1e-12);
  }
}

TEST(AvgPoolTest, GradMatchesNumericGradient) {
  for (const PoolCase& c :
       {PoolCase{{2, 5, 6, 2}, 3, 3, 2, 2, "SAME"}, PoolCase{{1, 6, 5, 3}, 2, 3, 1, 2, "VALID"},
        PoolCase{{1, 4, 4, 1}, 3, 3, 1, 1, "SAME"}}) {
    Tensor input = RandomTensor<double>(c.input, 5);
    AttrMap attrs =
        PoolAttrs(c.window_rows, c.window_cols, c.stride_rows, c.stride_cols, c.padding);
    KernelRunner runner;
    StatusOr<Tensor> out = runner.RunOne("AvgPool", {input}, attrs);
    ASSERT_TRUE(out.ok()) << out.status();
    Tensor weights = RandomTensor<double>(out->shape(), 6);
    Tensor numeric = NumericGradient(
        [&](const Tensor& x) {
          StatusOr<Tensor> y = runner.RunOne("AvgPool", {x}, attrs);
          return y.ok() ? WeightedSum(*y, weights) : 0.0;
        },
        input, 1e-6);
    StatusOr<Tensor> dx = runner.RunOne("AvgPoolGrad", {Sizes(c.input), weights}, attrs);
    ASSERT_TRUE(dx.ok()) << dx.status();
    EXPECT_TENSOR_NEAR(*dx, numeric, 1e-8, 1e-8);
  }
}

TEST(AvgPoolTest, ErrorsNameTheNode) {
  KernelRunner runner;
  Tensor input = RandomTensor<float>({1, 4, 4, 2}, 1);
  AttrMap attrs = PoolAttrs(2, 2, 2, 2, "VALID");
  attrs["ksize"] = MakeAttrValue(std::vector<int64_t>{1, 2, 2, 2});
  ExpectKernelError(runner.RunOne("AvgPool", {input}, attrs).status(), "AvgPool",
                    "ksize must be 1 in the batch and channel dimensions");
  ExpectKernelError(
      runner.RunOne("AvgPool", {RandomTensor<float>({4, 4, 2}, 1)}, PoolAttrs(2, 2, 2, 2, "SAME"))
          .status(),
      "AvgPool", "rank 4");
  ExpectKernelError(
      runner
          .RunOne("AvgPool", {RandomTensor<float>({1, 2, 2, 1}, 1)}, PoolAttrs(5, 5, 1, 1, "VALID"))
          .status(),
      "AvgPool", "computed output size would be negative");
  ExpectKernelError(
      runner
          .RunOne("AvgPoolGrad", {Sizes(input.shape()), RandomTensor<float>({1, 2, 3, 2}, 3)},
                  PoolAttrs(2, 2, 2, 2, "VALID"))
          .status(),
      "AvgPoolGrad", "grad has shape [1,2,3,2]");
  // Integers have no mean here, as in the reference system.
  EXPECT_FALSE(runner
                   .RunOne("AvgPool", {RandomIntegers<int32_t>({1, 2, 2, 1}, 1, 0, 3)},
                           PoolAttrs(2, 2, 2, 2, "VALID"))
                   .ok());
}

TEST(AvgPoolTest, KernelChecksShapesWithoutShapeInference) {
  AttrMap attrs = PoolAttrs(2, 2, 2, 2, "VALID");
  attrs["T"] = MakeAttrValue(DataType::kFloat);
  ExpectKernelError(RunKernelOnly("AvgPool", {RandomTensor<float>({4, 4, 2}, 1)}, attrs).status(),
                    "AvgPool", "value must be rank 4");
  ExpectKernelError(
      RunKernelOnly("AvgPoolGrad", {Sizes({1, 4, 4, 2}), RandomTensor<float>({1, 2, 3, 2}, 3)},
                    attrs)
          .status(),
      "AvgPoolGrad", "but pooling orig_input_shape [1,4,4,2] gives shape [1,2,2,2]");
  ExpectKernelError(
      RunKernelOnly("AvgPoolGrad",
                    {Tensor::FromVector<int32_t>({1, 4, 4}), RandomTensor<float>({1, 2, 2, 2}, 3)},
                    attrs)
          .status(),
      "AvgPoolGrad", "orig_input_shape must be an int32 vector of 4 sizes");
  ExpectKernelError(
      RunKernelOnly(
          "AvgPoolGrad",
          {Tensor::FromVector<int32_t>({1, -4, 4, 2}), RandomTensor<float>({1, 2, 2, 2}, 3)}, attrs)
          .status(),
      "AvgPoolGrad", "is not a valid shape");
}

}  // namespace
}  // namespace weft::kernels
