// The layers of W2 (the Fashion-MNIST CNN, batch 128, NHWC float32) one op at a time through a
// DirectSession with 2 intra-op threads: each convolution pass with im2col + OpenBLAS GEMM, with
// oneDNN, and with the algorithm Weft chooses by itself, the max pools forward and backward, and
// OpenBLAS's own 2-thread SGEMM on a 1024 cube as the machine's roofline. bench/report.py `conv`
// turns the JSON into the table of `bench/run.sh conv`. Arguments: layer, op, algorithm.
#include <cstdlib>
#include <random>

#include <benchmark/benchmark.h>
#include <cblas.h>

#include "weft/graph/builder/ops.h"
#include "weft/kernels/nn/conv_algorithm.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/session.h"

namespace weft {
namespace {

struct Layer {
  int64_t size, in_depth, out_depth, window;  // square images and windows, stride 1, SAME
};
// W2's two convolution layers; each is followed by ReLU and a 2x2 max pool of stride 2.
constexpr Layer kLayers[] = {{28, 1, 32, 5}, {14, 32, 64, 5}};
constexpr int64_t kBatch = 128;

enum Op { kConv2D, kBackpropInput, kBackpropFilter, kMaxPool, kMaxPoolGrad };
enum Algorithm { kIm2ColGemm, kOneDnn, kChosen };

Tensor RandomTensor(const TensorShape& shape, uint32_t seed) {
  Tensor t(DataType::kFloat, shape);
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& v : t.flat<float>()) v = uniform(generator);
  return t;
}

Tensor Sizes(const TensorShape& shape) {
  std::vector<int32_t> sizes;
  for (int i = 0; i < shape.dims(); ++i) sizes.push_back(static_cast<int32_t>(shape.dim_size(i)));
  return Tensor::FromVector<int32_t>(sizes, TensorShape({4}));
}

// The graph of one op over layer `layer`'s tensors; its output is named "out".
proto::GraphDef OpGraph(const Layer& layer, Op op) {
  Scope root = Scope::NewRootScope();
  const TensorShape input({kBatch, layer.size, layer.size, layer.in_depth});
  const TensorShape filter({layer.window, layer.window, layer.in_depth, layer.out_depth});
  const TensorShape output({kBatch, layer.size, layer.size, layer.out_depth});
  const TensorShape pooled({kBatch, layer.size / 2, layer.size / 2, layer.out_depth});
  const std::vector<int64_t> ones = {1, 1, 1, 1}, twos = {1, 2, 2, 1};
  Scope out = root.WithOpName("out");
  switch (op) {
    case kConv2D:
      ops::Conv2D(out, ops::Const(root, RandomTensor(input, 1)),
                  ops::Const(root, RandomTensor(filter, 2)), ones, "SAME");
      break;
    case kBackpropInput:
      ops::Conv2DBackpropInput(out, ops::Const(root, Sizes(input)),
                               ops::Const(root, RandomTensor(filter, 2)),
                               ops::Const(root, RandomTensor(output, 3)), ones, "SAME");
      break;
    case kBackpropFilter:
      ops::Conv2DBackpropFilter(out, ops::Const(root, RandomTensor(input, 1)),
                                ops::Const(root, Sizes(filter)),
                                ops::Const(root, RandomTensor(output, 3)), ones, "SAME");
      break;
    case kMaxPool:
      ops::MaxPool(out, ops::Const(root, RandomTensor(output, 4)), twos, twos, "SAME");
      break;
    case kMaxPoolGrad: {
      Output activations = ops::Const(root, RandomTensor(output, 4));
      ops::MaxPoolGrad(out, activations, ops::MaxPool(root, activations, twos, twos, "SAME"),
                       ops::Const(root, RandomTensor(pooled, 5)), twos, twos, "SAME");
      break;
    }
  }
  return root.ToGraphDef().value();
}

double ConvFlops(const Layer& layer) {
  return 2.0 * kBatch * layer.size * layer.size * layer.out_depth * layer.in_depth * layer.window *
         layer.window;
}

void BM_W2Layer(benchmark::State& state) {
  const Layer& layer = kLayers[state.range(0)];
  const Op op = static_cast<Op>(state.range(1));
  const Algorithm algorithm = static_cast<Algorithm>(state.range(2));
  if (algorithm == kChosen) {
    kernels::SetConvAlgorithmOverride(std::nullopt);
  } else {
    kernels::SetConvAlgorithmOverride(algorithm == kOneDnn ? kernels::ConvAlgorithm::kOneDnn
                                                           : kernels::ConvAlgorithm::kIm2ColGemm);
  }
  SessionOptions options;
  options.config.set_intra_op_parallelism_threads(2);
  options.config.set_inter_op_parallelism_threads(1);
  auto session = NewSession(options).value();
  if (!session->Create(OpGraph(layer, op)).ok()) std::abort();
  std::vector<Tensor> outputs;
  // The first run builds the primitives and warms the allocator's cache.
  if (!session->Run({}, {"out"}, {}, &outputs).ok()) std::abort();
  for (auto _ : state) {
    Status status = session->Run({}, {"out"}, {}, &outputs);
    benchmark::DoNotOptimize(status);
  }
  kernels::SetConvAlgorithmOverride(std::nullopt);
  if (op <= kBackpropFilter) {
    state.counters["GFLOPS"] =
        benchmark::Counter(ConvFlops(layer) * static_cast<double>(state.iterations()) / 1e9,
                           benchmark::Counter::kIsRate);
  }
}

void BM_OpenBlasSgemm1024(benchmark::State& state) {
  constexpr int n = 1024;
  ConfigureBlasThreads(2);
  Tensor a = RandomTensor(TensorShape({n, n}), 1), b = RandomTensor(TensorShape({n, n}), 2);
  Tensor c(DataType::kFloat, TensorShape({n, n}));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data<float>(), n,
                b.data<float>(), n, 0.0f, c.data<float>(), n);
    benchmark::ClobberMemory();
  }
  UseSingleThreadedBlas();
  state.counters["GFLOPS"] = benchmark::Counter(
      2.0 * n * n * n * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void Layers(benchmark::internal::Benchmark* b) {
  b->ArgNames({"layer", "op", "algorithm"});
  for (int layer : {0, 1}) {
    for (int op : {kConv2D, kBackpropInput, kBackpropFilter}) {
      for (int algorithm : {kIm2ColGemm, kOneDnn, kChosen}) b->Args({layer, op, algorithm});
    }
    for (int op : {kMaxPool, kMaxPoolGrad}) b->Args({layer, op, kChosen});
  }
}
BENCHMARK(BM_OpenBlasSgemm1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_W2Layer)->Apply(Layers)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace weft

BENCHMARK_MAIN();
