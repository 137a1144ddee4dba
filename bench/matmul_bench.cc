// MatMul float32: Weft's MatMul op run through a DirectSession (oneDNN's sgemm, the product split
// over Weft's intra-op threads) against OpenBLAS's cblas_sgemm called directly with its own
// threads, both with the same thread count. Arguments: threads, m, n, k.
#include <random>
#include <utility>

#include <benchmark/benchmark.h>
#include <cblas.h>

#include "weft/graph/builder/ops.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/session.h"

namespace weft {
namespace {

Tensor RandomMatrix(int64_t rows, int64_t cols, uint32_t seed) {
  Tensor t(DataType::kFloat, TensorShape({rows, cols}));
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& v : t.flat<float>()) v = uniform(generator);
  return t;
}

struct Dims {
  int threads, m, n, k;
};
Dims ReadDims(const benchmark::State& state) {
  return {static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
          static_cast<int>(state.range(2)), static_cast<int>(state.range(3))};
}

void SetFlops(benchmark::State& state, const Dims& d) {
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * d.m * d.n * d.k * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
}

void BM_WeftMatMul(benchmark::State& state) {
  const Dims d = ReadDims(state);
  Scope root = Scope::NewRootScope();
  ops::MatMul(root.WithOpName("product"), ops::Const(root, RandomMatrix(d.m, d.k, 1)),
              ops::Const(root, RandomMatrix(d.k, d.n, 2)));
  SessionOptions options;
  options.config.set_intra_op_parallelism_threads(d.threads);
  options.config.set_inter_op_parallelism_threads(1);
  auto session = NewSession(options).value();
  if (!session->Create(root.ToGraphDef().value()).ok()) std::abort();
  std::vector<Tensor> outputs;
  if (!session->Run({}, {"product"}, {}, &outputs).ok()) std::abort();
  for (auto _ : state) {
    Status status = session->Run({}, {"product"}, {}, &outputs);
    benchmark::DoNotOptimize(status);
  }
  SetFlops(state, d);
}

void BM_OpenBlasSgemm(benchmark::State& state) {
  const Dims d = ReadDims(state);
  ConfigureBlasThreads(d.threads);
  Tensor a = RandomMatrix(d.m, d.k, 1), b = RandomMatrix(d.k, d.n, 2);
  Tensor c(DataType::kFloat, TensorShape({d.m, d.n}));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d.m, d.n, d.k, 1.0f, a.data<float>(),
                d.k, b.data<float>(), d.n, 0.0f, c.data<float>(), d.n);
    benchmark::ClobberMemory();
  }
  SetFlops(state, d);
}

// The square 1024 case and the GEMMs of a W1 (MLP, batch 128) forward and weight-gradient step,
// each shape measured by both sides one after the other, so that a slow spell of the machine hits
// both sides of a ratio alike.
void RegisterShapes() {
  const Dims shapes[] = {
      {2, 1024, 1024, 1024}, {2, 128, 256, 784}, {2, 784, 256, 128}, {2, 128, 256, 256}};
  for (const Dims& d : shapes) {
    for (auto [name, fn] : {std::pair{"BM_WeftMatMul", &BM_WeftMatMul},
                            std::pair{"BM_OpenBlasSgemm", &BM_OpenBlasSgemm}}) {
      benchmark::RegisterBenchmark(name, fn)
          ->ArgNames({"threads", "m", "n", "k"})
          ->Args({d.threads, d.m, d.n, d.k})
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  weft::RegisterShapes();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
