// Tests for the Conv2D kernel and shape function: hand-computed values, a direct 7-loop reference
// over many shapes (strides 1 and 2, SAME and VALID, odd sizes, 1x1, empty tensors, several
// im2col chunks), error paths, and an opt-in timing of the Fashion-MNIST CNN's convolutions.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>

#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ConvAttrs;
using testing::ExpectKernelError;
using testing::ForEachConvAlgorithmAndBlasThreads;
using testing::kConvAlgorithms;
using testing::RandomTensor;
using testing::RunKernelOnly;
using testing::ScopedConvAlgorithm;
using testing::Sizes;
using weft::testing::KernelRunner;
using weft::testing::ScopedBlasThreads;

struct ConvCase {
  int64_t batch, rows, cols, in_depth, window_rows, window_cols, out_depth, stride_rows,
      stride_cols;
  std::string padding;
};

// Output size and leading padding along one dimension, as the reference system defines them.
void ReferenceWindow(int64_t in, int64_t window, int64_t stride, const std::string& padding,
                     int64_t* out, int64_t* pad) {
  if (padding == "SAME") {
    *out = (in + stride - 1) / stride;
    *pad = std::max<int64_t>(0, (*out - 1) * stride + window - in) / 2;
  } else {
    *out = (in - window + stride) / stride;
    *pad = 0;
  }
}

// The direct definition: seven nested loops, accumulating in double.
template <typename T>
Tensor ReferenceConv(const Tensor& input, const Tensor& filter, int64_t stride_rows,
                     int64_t stride_cols, const std::string& padding) {
  const int64_t n = input.dim_size(0), h = input.dim_size(1), w = input.dim_size(2),
                ci = input.dim_size(3);
  const int64_t kh = filter.dim_size(0), kw = filter.dim_size(1), co = filter.dim_size(3);
  int64_t oh, ow, pad_top, pad_left;
  ReferenceWindow(h, kh, stride_rows, padding, &oh, &pad_top);
  ReferenceWindow(w, kw, stride_cols, padding, &ow, &pad_left);
  Tensor out(DataTypeToEnum<T>::value, TensorShape({n, oh, ow, co}));
  const T* x = input.data<T>();
  const T* f = filter.data<T>();
  T* y = out.data<T>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t r = 0; r < oh; ++r) {
      for (int64_t c = 0; c < ow; ++c) {
        for (int64_t o = 0; o < co; ++o) {
          double sum = 0;
          for (int64_t i = 0; i < kh; ++i) {
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t in_r = r * stride_rows - pad_top + i;
              const int64_t in_c = c * stride_cols - pad_left + j;
              if (in_r < 0 || in_r >= h || in_c < 0 || in_c >= w) continue;
              for (int64_t d = 0; d < ci; ++d) {
                sum += static_cast<double>(x[((b * h + in_r) * w + in_c) * ci + d]) *
                       static_cast<double>(f[((i * kw + j) * ci + d) * co + o]);
              }
            }
          }
          y[((b * oh + r) * ow + c) * co + o] = static_cast<T>(sum);
        }
      }
    }
  }
  return out;
}

template <typename T>
void CheckAgainstReference(const ConvCase& c, uint32_t seed, double tolerance,
                           int intra_op_threads = 2) {
  SCOPED_TRACE(StrCat("input [", c.batch, ",", c.rows, ",", c.cols, ",", c.in_depth, "] filter [",
                      c.window_rows, ",", c.window_cols, ",", c.in_depth, ",", c.out_depth,
                      "] strides ", c.stride_rows, "x", c.stride_cols, " ", c.padding));
  Tensor input = RandomTensor<T>(TensorShape({c.batch, c.rows, c.cols, c.in_depth}), seed);
  Tensor filter = RandomTensor<T>(
      TensorShape({c.window_rows, c.window_cols, c.in_depth, c.out_depth}), seed + 1);
  Tensor expected = ReferenceConv<T>(input, filter, c.stride_rows, c.stride_cols, c.padding);
  KernelRunner runner(intra_op_threads);
  StatusOr<Tensor> out =
      runner.RunOne("Conv2D", {input, filter}, ConvAttrs(c.stride_rows, c.stride_cols, c.padding));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TENSOR_NEAR(*out, expected, tolerance, tolerance);
}

const std::vector<ConvCase>& SmallCases() {
  static const std::vector<ConvCase> cases = {
      {1, 5, 5, 1, 3, 3, 1, 1, 1, "SAME"},  {2, 7, 6, 3, 3, 2, 4, 1, 1, "VALID"},
      {2, 7, 6, 3, 3, 3, 4, 2, 2, "SAME"},  {3, 9, 8, 2, 5, 5, 3, 2, 1, "SAME"},
      {2, 8, 9, 3, 4, 4, 2, 2, 2, "VALID"}, {2, 8, 9, 3, 4, 2, 2, 1, 2, "SAME"},
      {2, 6, 6, 4, 1, 1, 5, 1, 1, "VALID"}, {2, 7, 7, 4, 1, 1, 5, 2, 2, "SAME"},
      {1, 3, 3, 2, 5, 5, 2, 1, 1, "SAME"},  {2, 5, 5, 2, 5, 5, 3, 1, 1, "VALID"},
      {1, 4, 5, 2, 3, 3, 2, 3, 3, "SAME"},  {1, 4, 4, 1, 2, 2, 1, 4, 4, "VALID"},
      {1, 1, 1, 3, 1, 1, 2, 1, 1, "SAME"},  {3, 11, 13, 5, 3, 5, 7, 2, 3, "VALID"},
  };
  return cases;
}

TEST(Conv2DTest, HandComputedValidAndSame) {
  Tensor input = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, TensorShape({1, 3, 3, 1}));
  Tensor filter = Tensor::FromVector<float>({1, 0, 0, 1}, TensorShape({2, 2, 1, 1}));
  KernelRunner runner;
  StatusOr<Tensor> valid = runner.RunOne("Conv2D", {input, filter}, ConvAttrs(1, 1, "VALID"));
  ASSERT_TRUE(valid.ok()) << valid.status();
  EXPECT_TENSOR_EQ(*valid, Tensor::FromVector<float>({6, 8, 12, 14}, TensorShape({1, 2, 2, 1})));
  // SAME pads one row and column at the bottom and right (pad_total 1, pad_top 0).
  StatusOr<Tensor> same = runner.RunOne("Conv2D", {input, filter}, ConvAttrs(1, 1, "SAME"));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TENSOR_EQ(
      *same, Tensor::FromVector<float>({6, 8, 3, 12, 14, 6, 7, 8, 9}, TensorShape({1, 3, 3, 1})));
}

TEST(Conv2DTest, HandComputedStrideTwoWithTwoOutputChannels) {
  // 4x4 input 0..15, 1x1 filter with weights 1 and -2: stride 2 picks rows/cols 0 and 2.
  std::vector<double> values(16);
  for (int i = 0; i < 16; ++i) values[i] = i;
  Tensor input = Tensor::FromVector<double>(values, TensorShape({1, 4, 4, 1}));
  Tensor filter = Tensor::FromVector<double>({1, -2}, TensorShape({1, 1, 1, 2}));
  KernelRunner runner;
  StatusOr<Tensor> out = runner.RunOne("Conv2D", {input, filter}, ConvAttrs(2, 2, "VALID"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TENSOR_EQ(
      *out, Tensor::FromVector<double>({0, 0, 2, -4, 8, -16, 10, -20}, TensorShape({1, 2, 2, 2})));
}

// Single-threaded OpenBLAS lets the kernels run chunks as concurrent tasks; multi-threaded makes
// them run chunks one at a time. Both must give the same results.
// float runs both algorithms (oneDNN falls back to im2col where it cannot express the case).
TEST(Conv2DTest, MatchesReferenceFloat) {
  ForEachConvAlgorithmAndBlasThreads([] {
    uint32_t seed = 1;
    for (const ConvCase& c : SmallCases()) CheckAgainstReference<float>(c, seed += 2, 1e-4);
  });
}

// oneDNN splits the batch into one shard per intra-op thread: uneven shards (two primitives of
// different batch sizes), more threads than images, and W2's own layer shapes.
TEST(Conv2DTest, OneDnnShardsMatchReference) {
  ScopedConvAlgorithm forced(kernels::ConvAlgorithm::kOneDnn);
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(StrCat("intra-op threads ", threads));
    CheckAgainstReference<float>({5, 14, 14, 32, 5, 5, 64, 1, 1, "SAME"}, 21, 1e-3, threads);
    CheckAgainstReference<float>({2, 28, 28, 1, 5, 5, 32, 1, 1, "SAME"}, 23, 1e-4, threads);
    CheckAgainstReference<float>({1, 9, 8, 3, 3, 3, 16, 2, 2, "VALID"}, 25, 1e-4, threads);
  }
}

TEST(Conv2DTest, TheChoiceOfAlgorithmFollowsTheMeasurements) {
  using kernels::ConvAlgorithm;
  using kernels::ConvPass;
  auto geometry = [](int64_t rows, int64_t depth, int64_t window, int64_t stride,
                     const char* padding) {
    proto::NodeDef node;
    node.set_name("conv");
    kernels::WindowAttrs attrs;
    attrs.stride_rows = attrs.stride_cols = stride;
    attrs.padding =
        std::string(padding) == "SAME" ? kernels::Padding::kSame : kernels::Padding::kValid;
    return kernels::ComputeSpatialGeometry(node, TensorShape({8, rows, rows, depth}), window,
                                           window, attrs)
        .value();
  };
  const kernels::SpatialGeometry conv1 = geometry(28, 1, 5, 1, "SAME");
  const kernels::SpatialGeometry conv2 = geometry(14, 32, 5, 1, "SAME");
  for (ConvPass pass : {ConvPass::kForward, ConvPass::kBackpropInput, ConvPass::kBackpropFilter}) {
    EXPECT_EQ(kernels::ChooseConvAlgorithm(pass, conv2, 64, DataType::kFloat),
              ConvAlgorithm::kOneDnn);
    // oneDNN is float32 only here.
    EXPECT_EQ(kernels::ChooseConvAlgorithm(pass, conv2, 64, DataType::kDouble),
              ConvAlgorithm::kIm2ColGemm);
  }
  EXPECT_EQ(kernels::ChooseConvAlgorithm(ConvPass::kForward, conv1, 32, DataType::kFloat),
            ConvAlgorithm::kOneDnn);
  // One input channel: im2col + GEMM measured 3x faster for the input gradient.
  EXPECT_EQ(kernels::ChooseConvAlgorithm(ConvPass::kBackpropInput, conv1, 32, DataType::kFloat),
            ConvAlgorithm::kIm2ColGemm);
  // A VALID window that skips the last input rows needs negative padding, which oneDNN cannot
  // express, even when forced.
  const kernels::SpatialGeometry skipping = geometry(7, 4, 2, 3, "VALID");
  ScopedConvAlgorithm forced(ConvAlgorithm::kOneDnn);
  EXPECT_EQ(kernels::ChooseConvAlgorithm(ConvPass::kForward, skipping, 4, DataType::kFloat),
            ConvAlgorithm::kIm2ColGemm);
}

TEST(Conv2DTest, MatchesReferenceDouble) {
  for (int blas_threads : {1, 2}) {
    SCOPED_TRACE(StrCat("OpenBLAS threads ", blas_threads));
    ScopedBlasThreads blas(blas_threads);
    uint32_t seed = 100;
    for (const ConvCase& c : SmallCases()) CheckAgainstReference<double>(c, seed += 2, 1e-12);
  }
}

TEST(Conv2DTest, ManyIm2ColChunksMatchReference) {
  // Column buffers of several MB: the work is split into many chunks, some ending inside an
  // image, run in order or by 2 or 3 concurrent tasks.
  for (int blas_threads : {1, 2}) {
    SCOPED_TRACE(StrCat("OpenBLAS threads ", blas_threads));
    ScopedBlasThreads blas(blas_threads);
    {
      ScopedConvAlgorithm forced(kernels::ConvAlgorithm::kIm2ColGemm);
      CheckAgainstReference<float>({8, 64, 64, 32, 3, 3, 4, 1, 1, "SAME"}, 7, 1e-3);
    }
    CheckAgainstReference<double>({6, 48, 48, 32, 5, 5, 3, 2, 2, "VALID"}, 9, 1e-11, 3);
    CheckAgainstReference<double>({5, 40, 40, 8, 1, 1, 3, 1, 1, "VALID"}, 11, 1e-12, 3);
  }
}

TEST(Conv2DTest, EmptyTensors) {
  KernelRunner runner;
  // No images; an output too small for the window; no input channels; no output channels.
  StatusOr<Tensor> no_batch = runner.RunOne(
      "Conv2D",
      {Tensor(DataType::kFloat, TensorShape({0, 5, 5, 2})), RandomTensor<float>({3, 3, 2, 2}, 1)},
      ConvAttrs(1, 1, "SAME"));
  ASSERT_TRUE(no_batch.ok()) << no_batch.status();
  EXPECT_EQ(no_batch->shape(), TensorShape({0, 5, 5, 2}));
  StatusOr<Tensor> no_output = runner.RunOne(
      "Conv2D", {RandomTensor<float>({2, 2, 2, 2}, 2), RandomTensor<float>({3, 3, 2, 2}, 3)},
      ConvAttrs(1, 1, "VALID"));
  ASSERT_TRUE(no_output.ok()) << no_output.status();
  EXPECT_EQ(no_output->shape(), TensorShape({2, 0, 0, 2}));
  for (const ConvCase& c :
       {ConvCase{2, 5, 5, 0, 3, 3, 2, 1, 1, "SAME"}, ConvCase{2, 5, 5, 0, 1, 1, 2, 1, 1, "SAME"},
        ConvCase{2, 5, 5, 2, 3, 3, 0, 1, 1, "SAME"}}) {
    CheckAgainstReference<float>(c, 5, 0);
  }
}

TEST(Conv2DTest, ShapeErrorsNameTheNode) {
  KernelRunner runner;
  Tensor input = RandomTensor<float>({1, 5, 5, 3}, 1);
  ExpectKernelError(
      runner
          .RunOne("Conv2D", {input, RandomTensor<float>({3, 3, 2, 4}, 2)}, ConvAttrs(1, 1, "SAME"))
          .status(),
      "Conv2D", "input depth and filter in_channels must be equal, but are 3 and 2");
  ExpectKernelError(
      runner
          .RunOne("Conv2D",
                  {RandomTensor<float>({5, 5, 3}, 1), RandomTensor<float>({3, 3, 3, 4}, 2)},
                  ConvAttrs(1, 1, "SAME"))
          .status(),
      "Conv2D", "rank 4");
  ExpectKernelError(
      runner
          .RunOne("Conv2D",
                  {RandomTensor<float>({1, 2, 2, 1}, 1), RandomTensor<float>({5, 5, 1, 1}, 2)},
                  ConvAttrs(1, 1, "VALID"))
          .status(),
      "Conv2D", "computed output size would be negative");
  ExpectKernelError(
      runner
          .RunOne("Conv2D", {input, RandomTensor<float>({0, 3, 3, 1}, 2)}, ConvAttrs(1, 1, "SAME"))
          .status(),
      "Conv2D", "filter height and width must be positive");
}

TEST(Conv2DTest, AttrErrorsNameTheNode) {
  KernelRunner runner;
  Tensor input = RandomTensor<float>({1, 5, 5, 3}, 1);
  Tensor filter = RandomTensor<float>({3, 3, 3, 2}, 2);
  auto run = [&](AttrMap attrs) {
    return runner.RunOne("Conv2D", {input, filter}, attrs).status();
  };
  AttrMap attrs = ConvAttrs(1, 1, "SAME");
  attrs["strides"] = MakeAttrValue(std::vector<int64_t>{1, 1, 1});
  ExpectKernelError(run(attrs), "Conv2D", "strides must have 4 elements, but has 3");
  attrs["strides"] = MakeAttrValue(std::vector<int64_t>{2, 1, 1, 1});
  ExpectKernelError(run(attrs), "Conv2D", "strides must be 1 in the batch and channel");
  attrs["strides"] = MakeAttrValue(std::vector<int64_t>{1, 0, 1, 1});
  ExpectKernelError(run(attrs), "Conv2D", "strides must be positive");
  attrs = ConvAttrs(1, 1, "SAME");
  attrs["dilations"] = MakeAttrValue(std::vector<int64_t>{1, 2, 2, 1});
  ExpectKernelError(run(attrs), "Conv2D", "dilations must be [1,1,1,1]");
  attrs = ConvAttrs(1, 1, "SAME");
  attrs["data_format"] = MakeAttrValue("NCHW");
  ExpectKernelError(run(attrs), "Conv2D", "data_format NCHW is not supported");
  attrs = ConvAttrs(1, 1, "FULL");
  EXPECT_TRUE(IsInvalidArgument(run(attrs)));
}

TEST(Conv2DTest, KernelChecksShapesWithoutShapeInference) {
  AttrMap attrs = ConvAttrs(1, 1, "SAME");
  attrs["T"] = MakeAttrValue(DataType::kFloat);
  ExpectKernelError(
      RunKernelOnly("Conv2D",
                    {RandomTensor<float>({1, 5, 5, 3}, 1), RandomTensor<float>({3, 3, 2, 4}, 2)},
                    attrs)
          .status(),
      "Conv2D", "input depth 3 does not match filter in_channels 2");
  ExpectKernelError(
      RunKernelOnly("Conv2D",
                    {RandomTensor<float>({5, 5, 3}, 1), RandomTensor<float>({3, 3, 3, 4}, 2)},
                    attrs)
          .status(),
      "Conv2D", "input must be rank 4");
  attrs["strides"] = MakeAttrValue(std::vector<int64_t>{1, -1, 1, 1});
  ExpectKernelError(
      RunKernelOnly("Conv2D",
                    {RandomTensor<float>({1, 5, 5, 3}, 1), RandomTensor<float>({3, 3, 3, 4}, 2)},
                    attrs)
          .status(),
      "Conv2D", "strides must be positive");
}

double ProcessCpuMs() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return now.tv_sec * 1e3 + now.tv_nsec * 1e-6;
}

// Times the convolutions of the Fashion-MNIST CNN (W2) at batch 128, forward and both backprops.
// Run with --gtest_also_run_disabled_tests --gtest_filter='*Timing*'.
TEST(Conv2DTest, DISABLED_FashionMnistCnnTiming) {
  KernelRunner runner(NumSchedulableCpus());
  struct Layer {
    TensorShape input, filter;
  };
  for (const Layer& layer :
       {Layer{{128, 28, 28, 1}, {5, 5, 1, 32}}, Layer{{128, 14, 14, 32}, {5, 5, 32, 64}}}) {
    Tensor input = RandomTensor<float>(layer.input, 1);
    Tensor filter = RandomTensor<float>(layer.filter, 2);
    AttrMap attrs = ConvAttrs(1, 1, "SAME");
    StatusOr<Tensor> out = runner.RunOne("Conv2D", {input, filter}, attrs);
    ASSERT_TRUE(out.ok()) << out.status();
    Tensor grad = RandomTensor<float>(out->shape(), 3);
    auto time = [&](const char* name, auto&& fn) {
      constexpr int kRuns = 20;
      ASSERT_TRUE(fn().ok());  // warm up
      // Minimum wall and process CPU time: the least disturbed by other processes.
      double best_ms = 1e30, best_cpu_ms = 1e30;
      for (int i = 0; i < kRuns; ++i) {
        const double cpu_start = ProcessCpuMs();
        auto start = std::chrono::steady_clock::now();
        ASSERT_TRUE(fn().ok());
        best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(
                                        std::chrono::steady_clock::now() - start)
                                        .count());
        best_cpu_ms = std::min(best_cpu_ms, ProcessCpuMs() - cpu_start);
      }
      std::cout << name << " " << layer.input << " * " << layer.filter << ": " << best_ms
                << " ms wall, " << best_cpu_ms << " ms cpu (best of " << kRuns << ")\n";
    };
    time("Conv2D", [&] { return runner.RunOne("Conv2D", {input, filter}, attrs).status(); });
    time("Conv2DBackpropInput", [&] {
      return runner.RunOne("Conv2DBackpropInput", {Sizes(layer.input), filter, grad}, attrs)
          .status();
    });
    time("Conv2DBackpropFilter", [&] {
      return runner.RunOne("Conv2DBackpropFilter", {input, Sizes(layer.filter), grad}, attrs)
          .status();
    });
  }
}

}  // namespace
}  // namespace weft::kernels

namespace weft::kernels {
namespace {

// _FusedConv2D (Conv2D -> BiasAdd -> Relu fused by graph/fuse_ops.h) against the separate
// kernels: float on both algorithms (oneDNN applies bias and ReLU as post-ops), and double.
template <typename T>
void CheckFusedConv(uint32_t seed, double tolerance) {
  KernelRunner runner;
  Tensor input = RandomTensor<T>(TensorShape({3, 9, 8, 4}), seed);
  Tensor filter = RandomTensor<T>(TensorShape({3, 3, 4, 6}), seed + 1);
  Tensor bias = RandomTensor<T>(TensorShape({6}), seed + 2);
  AttrMap attrs = ConvAttrs(1, 1, "SAME");
  StatusOr<Tensor> conv = runner.RunOne("Conv2D", {input, filter}, attrs);
  ASSERT_TRUE(conv.ok()) << conv.status();
  StatusOr<Tensor> biased = runner.RunOne("BiasAdd", {*conv, bias});
  ASSERT_TRUE(biased.ok()) << biased.status();
  StatusOr<Tensor> activated = runner.RunOne("Relu", {*biased});
  ASSERT_TRUE(activated.ok()) << activated.status();
  for (const char* activation : {"None", "Relu"}) {
    SCOPED_TRACE(activation);
    AttrMap fused_attrs = attrs;
    fused_attrs["activation"] = MakeAttrValue(std::string(activation));
    StatusOr<Tensor> fused = runner.RunOne("_FusedConv2D", {input, filter, bias}, fused_attrs);
    ASSERT_TRUE(fused.ok()) << fused.status();
    EXPECT_TENSOR_NEAR(*fused, std::string(activation) == "Relu" ? *activated : *biased, tolerance,
                       tolerance);
  }
}

TEST(FusedConv2DTest, EqualsConv2DBiasAddRelu) {
  for (kernels::ConvAlgorithm algorithm : kConvAlgorithms) {
    SCOPED_TRACE(kernels::ConvAlgorithmName(algorithm));
    ScopedConvAlgorithm forced(algorithm);
    CheckFusedConv<float>(51, 1e-5);
  }
  CheckFusedConv<double>(61, 1e-12);
}

TEST(FusedConv2DTest, ABiasOfTheWrongShapeNamesTheNode) {
  KernelRunner runner;
  AttrMap attrs = ConvAttrs(1, 1, "SAME");
  attrs["activation"] = MakeAttrValue(std::string("Relu"));
  StatusOr<Tensor> fused = runner.RunOne("_FusedConv2D",
                                         {RandomTensor<float>(TensorShape({1, 5, 5, 2}), 1),
                                          RandomTensor<float>(TensorShape({3, 3, 2, 4}), 2),
                                          RandomTensor<float>(TensorShape({2, 2}), 3)},
                                         attrs);
  ExpectKernelError(fused.status(), "_FusedConv2D", "bias must be a vector of 4 values");
}

}  // namespace
}  // namespace weft::kernels
