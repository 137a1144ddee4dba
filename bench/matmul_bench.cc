// MatMul 1024x1024 float32: Weft's MatMul op run through a DirectSession against OpenBLAS's
// cblas_sgemm called directly, both with OpenBLAS sized to the same thread count.
#include <random>

#include <benchmark/benchmark.h>
#include <cblas.h>

#include "weft/graph/builder/ops.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/session.h"

namespace weft {
namespace {

constexpr int kSize = 1024;

Tensor RandomMatrix(uint32_t seed) {
  Tensor t(DataType::kFloat, TensorShape({kSize, kSize}));
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (float& v : t.flat<float>()) v = uniform(generator);
  return t;
}

void SetFlops(benchmark::State& state) {
  state.counters["GFLOPS"] = benchmark::Counter(
      2.0 * kSize * kSize * kSize * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

void BM_WeftMatMul(benchmark::State& state) {
  Scope root = Scope::NewRootScope();
  ops::MatMul(root.WithOpName("product"), ops::Const(root, RandomMatrix(1)),
              ops::Const(root, RandomMatrix(2)));
  SessionOptions options;
  options.config.set_intra_op_parallelism_threads(static_cast<int>(state.range(0)));
  options.config.set_inter_op_parallelism_threads(1);
  auto session = NewSession(options).value();
  if (!session->Create(root.ToGraphDef().value()).ok()) std::abort();
  std::vector<Tensor> outputs;
  if (!session->Run({}, {"product"}, {}, &outputs).ok()) std::abort();
  for (auto _ : state) {
    Status status = session->Run({}, {"product"}, {}, &outputs);
    benchmark::DoNotOptimize(status);
  }
  SetFlops(state);
}
BENCHMARK(BM_WeftMatMul)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_OpenBlasSgemm(benchmark::State& state) {
  ConfigureBlasThreads(static_cast<int>(state.range(0)));
  Tensor a = RandomMatrix(1), b = RandomMatrix(2);
  Tensor c(DataType::kFloat, TensorShape({kSize, kSize}));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kSize, kSize, kSize, 1.0f,
                a.data<float>(), kSize, b.data<float>(), kSize, 0.0f, c.data<float>(), kSize);
    benchmark::ClobberMemory();
  }
  SetFlops(state);
}
BENCHMARK(BM_OpenBlasSgemm)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace weft

BENCHMARK_MAIN();
