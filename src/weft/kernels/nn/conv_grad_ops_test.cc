// Tests for Conv2DBackpropInput and Conv2DBackpropFilter: against naive scatter loops over many
// shapes (including chunk boundaries inside an image), against central differences of Conv2D in
// float64, shape inference with and without constant sizes, and error paths.
#include <algorithm>

#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ConvAttrs;
using testing::ExpectKernelError;
using testing::ForEachConvAlgorithmAndBlasThreads;
using testing::NumericGradient;
using testing::RandomTensor;
using testing::RunKernelOnly;
using testing::ScopedConvAlgorithm;
using testing::Sizes;
using testing::ToFloat;
using testing::WeightedSum;
using weft::testing::KernelRunner;
using weft::testing::ScopedBlasThreads;

struct GradCase {
  TensorShape input, filter;
  int64_t stride_rows, stride_cols;
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

// Both gradients by the direct scatter loops: for every output cell and every window tap,
// input_grad += grad * filter and filter_grad += input * grad.
template <typename T>
void ReferenceGrads(const GradCase& c, const Tensor& input, const Tensor& filter,
                    const Tensor& grad, Tensor* input_grad, Tensor* filter_grad) {
  const int64_t n = c.input.dim_size(0), h = c.input.dim_size(1), w = c.input.dim_size(2),
                ci = c.input.dim_size(3);
  const int64_t kh = c.filter.dim_size(0), kw = c.filter.dim_size(1), co = c.filter.dim_size(3);
  int64_t oh, ow, pad_top, pad_left;
  Window(h, kh, c.stride_rows, c.padding, &oh, &pad_top);
  Window(w, kw, c.stride_cols, c.padding, &ow, &pad_left);
  std::vector<double> dx(input.NumElements(), 0.0), df(filter.NumElements(), 0.0);
  const T* x = input.data<T>();
  const T* f = filter.data<T>();
  const T* dy = grad.data<T>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t r = 0; r < oh; ++r) {
      for (int64_t col = 0; col < ow; ++col) {
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t in_r = r * c.stride_rows - pad_top + i;
            const int64_t in_c = col * c.stride_cols - pad_left + j;
            if (in_r < 0 || in_r >= h || in_c < 0 || in_c >= w) continue;
            for (int64_t d = 0; d < ci; ++d) {
              for (int64_t o = 0; o < co; ++o) {
                const double g = dy[((b * oh + r) * ow + col) * co + o];
                const int64_t xi = ((b * h + in_r) * w + in_c) * ci + d;
                const int64_t fi = ((i * kw + j) * ci + d) * co + o;
                dx[xi] += g * static_cast<double>(f[fi]);
                df[fi] += g * static_cast<double>(x[xi]);
              }
            }
          }
        }
      }
    }
  }
  *input_grad = Tensor(DataTypeToEnum<T>::value, c.input);
  *filter_grad = Tensor(DataTypeToEnum<T>::value, c.filter);
  for (size_t i = 0; i < dx.size(); ++i) input_grad->data<T>()[i] = static_cast<T>(dx[i]);
  for (size_t i = 0; i < df.size(); ++i) filter_grad->data<T>()[i] = static_cast<T>(df[i]);
}

TensorShape OutputShape(const GradCase& c) {
  int64_t oh, ow, pad;
  Window(c.input.dim_size(1), c.filter.dim_size(0), c.stride_rows, c.padding, &oh, &pad);
  Window(c.input.dim_size(2), c.filter.dim_size(1), c.stride_cols, c.padding, &ow, &pad);
  return TensorShape({c.input.dim_size(0), oh, ow, c.filter.dim_size(3)});
}

template <typename T>
void CheckAgainstReference(const GradCase& c, uint32_t seed, double tolerance,
                           int intra_op_threads = 2) {
  SCOPED_TRACE(StrCat("input ", c.input, " filter ", c.filter, " strides ", c.stride_rows, "x",
                      c.stride_cols, " ", c.padding));
  Tensor input = RandomTensor<T>(c.input, seed);
  Tensor filter = RandomTensor<T>(c.filter, seed + 1);
  Tensor grad = RandomTensor<T>(OutputShape(c), seed + 2);
  Tensor expected_input_grad, expected_filter_grad;
  ReferenceGrads<T>(c, input, filter, grad, &expected_input_grad, &expected_filter_grad);
  KernelRunner runner(intra_op_threads);
  AttrMap attrs = ConvAttrs(c.stride_rows, c.stride_cols, c.padding);
  StatusOr<Tensor> input_grad =
      runner.RunOne("Conv2DBackpropInput", {Sizes(c.input), filter, grad}, attrs);
  ASSERT_TRUE(input_grad.ok()) << input_grad.status();
  EXPECT_TENSOR_NEAR(*input_grad, expected_input_grad, tolerance, tolerance);
  StatusOr<Tensor> filter_grad =
      runner.RunOne("Conv2DBackpropFilter", {input, Sizes(c.filter), grad}, attrs);
  ASSERT_TRUE(filter_grad.ok()) << filter_grad.status();
  EXPECT_TENSOR_NEAR(*filter_grad, expected_filter_grad, tolerance, tolerance);
}

const std::vector<GradCase>& Cases() {
  static const std::vector<GradCase> cases = {
      {{1, 5, 5, 1}, {3, 3, 1, 1}, 1, 1, "SAME"},  {{2, 7, 6, 3}, {3, 2, 3, 4}, 1, 1, "VALID"},
      {{2, 7, 6, 3}, {3, 3, 3, 4}, 2, 2, "SAME"},  {{3, 9, 8, 2}, {5, 5, 2, 3}, 2, 1, "SAME"},
      {{2, 8, 9, 3}, {4, 4, 3, 2}, 2, 2, "VALID"}, {{2, 6, 6, 4}, {1, 1, 4, 5}, 1, 1, "VALID"},
      {{2, 7, 7, 4}, {1, 1, 4, 5}, 2, 2, "SAME"},  {{1, 3, 3, 2}, {5, 5, 2, 2}, 1, 1, "SAME"},
      {{2, 5, 5, 2}, {5, 5, 2, 3}, 1, 1, "VALID"}, {{1, 4, 5, 2}, {3, 3, 2, 2}, 3, 3, "SAME"},
      {{1, 7, 7, 1}, {2, 2, 1, 1}, 3, 3, "VALID"}, {{3, 11, 13, 5}, {3, 5, 5, 7}, 2, 3, "VALID"},
      {{0, 5, 5, 2}, {3, 3, 2, 2}, 1, 1, "SAME"},  {{2, 2, 2, 2}, {3, 3, 2, 2}, 1, 1, "VALID"},
      {{2, 5, 5, 2}, {3, 3, 2, 0}, 1, 1, "SAME"},  {{2, 5, 5, 0}, {3, 3, 0, 2}, 1, 1, "SAME"},
  };
  return cases;
}

TEST(Conv2DBackpropTest, HandComputed) {
  // Conv2D of a 3x3 input with a 2x2 filter [[1,0],[0,1]], VALID: each output adds in[i,j] and
  // in[i+1,j+1]. A gradient of ones on the 2x2 output sends 1 to each cell once per window that
  // uses it through a non-zero tap.
  Tensor filter = Tensor::FromVector<float>({1, 0, 0, 1}, TensorShape({2, 2, 1, 1}));
  Tensor grad = Tensor::FromVector<float>({1, 1, 1, 1}, TensorShape({1, 2, 2, 1}));
  KernelRunner runner;
  StatusOr<Tensor> dx = runner.RunOne("Conv2DBackpropInput", {Sizes({1, 3, 3, 1}), filter, grad},
                                      ConvAttrs(1, 1, "VALID"));
  ASSERT_TRUE(dx.ok()) << dx.status();
  EXPECT_TENSOR_EQ(
      *dx, Tensor::FromVector<float>({1, 1, 0, 1, 2, 1, 0, 1, 1}, TensorShape({1, 3, 3, 1})));
  // d/dfilter[i,j] = sum of the input cells under tap (i,j) = sums of 2x2 sub-blocks of 1..9.
  Tensor input = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, TensorShape({1, 3, 3, 1}));
  StatusOr<Tensor> df = runner.RunOne("Conv2DBackpropFilter", {input, Sizes({2, 2, 1, 1}), grad},
                                      ConvAttrs(1, 1, "VALID"));
  ASSERT_TRUE(df.ok()) << df.status();
  EXPECT_TENSOR_EQ(*df, Tensor::FromVector<float>({12, 16, 24, 28}, TensorShape({2, 2, 1, 1})));
}

// Single-threaded OpenBLAS lets the kernels run chunks as concurrent tasks; multi-threaded makes
// them run chunks one at a time. Both must give the same results.
// float runs both algorithms (oneDNN falls back to im2col where it cannot express the case).
TEST(Conv2DBackpropTest, MatchesReferenceFloat) {
  ForEachConvAlgorithmAndBlasThreads([] {
    uint32_t seed = 3;
    for (const GradCase& c : Cases()) CheckAgainstReference<float>(c, seed += 3, 1e-4);
  });
}

// oneDNN's shards: uneven (two primitives), more threads than images, W2's second layer; the
// filter gradient adds the shards' partial sums.
TEST(Conv2DBackpropTest, OneDnnShardsMatchReference) {
  ScopedConvAlgorithm forced(kernels::ConvAlgorithm::kOneDnn);
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(StrCat("intra-op threads ", threads));
    CheckAgainstReference<float>({{5, 14, 14, 32}, {5, 5, 32, 64}, 1, 1, "SAME"}, 31, 1e-3,
                                 threads);
    CheckAgainstReference<float>({{2, 9, 8, 6}, {3, 3, 6, 16}, 2, 2, "VALID"}, 33, 1e-4, threads);
  }
}

TEST(Conv2DBackpropTest, MatchesReferenceDouble) {
  for (int blas_threads : {1, 2}) {
    SCOPED_TRACE(StrCat("OpenBLAS threads ", blas_threads));
    ScopedBlasThreads blas(blas_threads);
    uint32_t seed = 300;
    for (const GradCase& c : Cases()) CheckAgainstReference<double>(c, seed += 3, 1e-12);
  }
}

TEST(Conv2DBackpropTest, ManyChunksMatchReference) {
  // Several column-buffer chunks, whose boundaries fall inside images (22 output rows per image)
  // when run in order, run in order or by 2 or 3 concurrent tasks.
  for (int blas_threads : {1, 2}) {
    SCOPED_TRACE(StrCat("OpenBLAS threads ", blas_threads));
    ScopedBlasThreads blas(blas_threads);
    CheckAgainstReference<double>({{6, 48, 48, 32}, {5, 5, 32, 3}, 2, 2, "VALID"}, 11, 1e-11);
    CheckAgainstReference<double>({{7, 40, 40, 16}, {3, 3, 16, 3}, 1, 1, "SAME"}, 12, 1e-11, 3);
    {
      ScopedConvAlgorithm forced(kernels::ConvAlgorithm::kIm2ColGemm);
      CheckAgainstReference<float>({{8, 64, 64, 32}, {3, 3, 32, 4}, 1, 1, "SAME"}, 13, 1e-3);
    }
    CheckAgainstReference<double>({{5, 40, 40, 8}, {1, 1, 8, 3}, 1, 1, "VALID"}, 14, 1e-12, 3);
  }
}

// Both gradients of `c` against central differences of the float64 Conv2D's weighted sum; with
// `as_float` the backprops run on float32 copies of the same values (so on oneDNN when forced).
void ExpectGradientsMatchNumeric(const GradCase& c, uint32_t seed, bool as_float,
                                 double tolerance) {
  SCOPED_TRACE(StrCat("input ", c.input, " filter ", c.filter));
  Tensor input = RandomTensor<double>(c.input, seed);
  Tensor filter = RandomTensor<double>(c.filter, seed + 1);
  Tensor weights = RandomTensor<double>(OutputShape(c), seed + 2);
  AttrMap attrs = ConvAttrs(c.stride_rows, c.stride_cols, c.padding);
  KernelRunner runner;
  auto loss = [&](const Tensor& x, const Tensor& f) {
    StatusOr<Tensor> y = runner.RunOne("Conv2D", {x, f}, attrs);
    EXPECT_TRUE(y.ok()) << y.status();
    return y.ok() ? WeightedSum(*y, weights) : 0.0;
  };
  Tensor numeric_dx = NumericGradient([&](const Tensor& x) { return loss(x, filter); }, input);
  Tensor numeric_df = NumericGradient([&](const Tensor& f) { return loss(input, f); }, filter);
  auto cast = [as_float](const Tensor& t) { return as_float ? ToFloat(t) : t; };
  StatusOr<Tensor> dx =
      runner.RunOne("Conv2DBackpropInput", {Sizes(c.input), cast(filter), cast(weights)}, attrs);
  StatusOr<Tensor> df =
      runner.RunOne("Conv2DBackpropFilter", {cast(input), Sizes(c.filter), cast(weights)}, attrs);
  ASSERT_TRUE(dx.ok() && df.ok()) << dx.status() << df.status();
  EXPECT_TENSOR_NEAR(*dx, cast(numeric_dx), tolerance, tolerance);
  EXPECT_TENSOR_NEAR(*df, cast(numeric_df), tolerance, tolerance);
}

TEST(Conv2DBackpropTest, MatchesNumericGradientOfConv2D) {
  for (const GradCase& c : {GradCase{{2, 5, 4, 2}, {3, 2, 2, 3}, 2, 2, "SAME"},
                            GradCase{{1, 6, 5, 3}, {3, 3, 3, 2}, 1, 2, "VALID"},
                            GradCase{{2, 3, 3, 2}, {1, 1, 2, 2}, 1, 1, "SAME"}}) {
    ExpectGradientsMatchNumeric(c, 21, /*as_float=*/false, 1e-7);
  }
}

// oneDNN's float gradients against central differences of the float64 Conv2D (im2col + GEMM,
// checked above), at float precision.
TEST(Conv2DBackpropTest, OneDnnMatchesNumericGradientOfConv2D) {
  ScopedConvAlgorithm forced(kernels::ConvAlgorithm::kOneDnn);
  for (const GradCase& c : {GradCase{{2, 5, 4, 2}, {3, 2, 2, 3}, 2, 2, "SAME"},
                            GradCase{{3, 6, 6, 8}, {5, 5, 8, 4}, 1, 1, "SAME"},
                            GradCase{{1, 6, 5, 3}, {3, 3, 3, 2}, 1, 2, "VALID"}}) {
    ExpectGradientsMatchNumeric(c, 41, /*as_float=*/true, 1e-4);
  }
}

TEST(Conv2DBackpropTest, ErrorsNameTheNode) {
  KernelRunner runner;
  AttrMap attrs = ConvAttrs(1, 1, "SAME");
  Tensor filter = RandomTensor<float>({3, 3, 2, 4}, 1);
  Tensor input = RandomTensor<float>({1, 5, 5, 2}, 2);
  Tensor grad = RandomTensor<float>({1, 5, 5, 4}, 3);
  ExpectKernelError(
      runner
          .RunOne("Conv2DBackpropInput",
                  {Sizes({1, 5, 5, 2}), filter, RandomTensor<float>({1, 4, 5, 4}, 3)}, attrs)
          .status(),
      "Conv2DBackpropInput", "out_backprop has shape [1,4,5,4]");
  ExpectKernelError(
      runner.RunOne("Conv2DBackpropInput", {Sizes({1, 5, 5, 3}), filter, grad}, attrs).status(),
      "Conv2DBackpropInput", "input depth and filter in_channels must be equal");
  ExpectKernelError(runner
                        .RunOne("Conv2DBackpropInput",
                                {Tensor::FromVector<int32_t>({1, 5, 5}), filter, grad}, attrs)
                        .status(),
                    "Conv2DBackpropInput", "must hold 4 sizes");
  ExpectKernelError(
      runner.RunOne("Conv2DBackpropFilter", {input, Sizes({3, 3, 2, 5}), grad}, attrs).status(),
      "Conv2DBackpropFilter", "out_backprop has shape [1,5,5,4]");
  ExpectKernelError(runner
                        .RunOne("Conv2DBackpropFilter",
                                {input, Tensor::FromVector<int32_t>({3, -3, 2, 4}), grad}, attrs)
                        .status(),
                    "Conv2DBackpropFilter", "negative size");
}

TEST(Conv2DBackpropTest, KernelChecksShapesWithoutShapeInference) {
  AttrMap attrs = ConvAttrs(1, 1, "SAME");
  attrs["T"] = MakeAttrValue(DataType::kFloat);
  Tensor filter = RandomTensor<float>({3, 3, 2, 4}, 1);
  Tensor input = RandomTensor<float>({1, 5, 5, 2}, 2);
  Tensor grad = RandomTensor<float>({1, 5, 5, 4}, 3);
  ExpectKernelError(
      RunKernelOnly("Conv2DBackpropInput", {Sizes({1, 5, 6, 2}), filter, grad}, attrs).status(),
      "Conv2DBackpropInput", "out_backprop has shape [1,5,5,4], but the convolution");
  ExpectKernelError(RunKernelOnly("Conv2DBackpropInput",
                                  {Tensor::FromVector<int32_t>({1, 5, 5}), filter, grad}, attrs)
                        .status(),
                    "Conv2DBackpropInput", "input_sizes must be an int32 vector of 4 sizes");
  ExpectKernelError(RunKernelOnly("Conv2DBackpropFilter",
                                  {input, Tensor::FromVector<int32_t>({3, -3, 2, 4}), grad}, attrs)
                        .status(),
                    "Conv2DBackpropFilter", "filter_sizes [3,-3,2,4] is not a valid shape");
  ExpectKernelError(
      RunKernelOnly("Conv2DBackpropFilter", {input, Sizes({3, 3, 3, 4}), grad}, attrs).status(),
      "Conv2DBackpropFilter", "input depth 2 does not match filter in_channels 3");
}

}  // namespace
}  // namespace weft::kernels
