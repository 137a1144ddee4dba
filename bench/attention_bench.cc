// FusedAttention on W6's shape (batch 32, 128 positions, 4 heads of 64, causal, layout BTHD, as
// MultiHeadAttention calls it): the forward alone and the forward with its gradient, through a
// DirectSession. Arguments: intra-op threads, then 0 for float32 products or 1 for bfloat16 ones.
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "weft/graph/builder/ops.h"
#include "weft/runtime/session.h"

namespace weft {
namespace {

constexpr int64_t kBatch = 32, kTime = 128, kHeads = 4, kDepth = 64;

Tensor RandomOperand(uint32_t seed) {
  Tensor t(DataType::kFloat, TensorShape({kBatch, kTime, kHeads, kDepth}));
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0, 1);
  for (float& v : t.flat<float>()) v = normal(generator);
  return t;
}

void RunAttention(benchmark::State& state, bool with_gradient) {
  Scope root = Scope::NewRootScope();
  ops::FusedAttentionAttrs attrs{.causal = true, .layout = "BTHD"};
  if (state.range(1) != 0) attrs.precision = "bfloat16";
  Output q = ops::Const(root, RandomOperand(1));
  Output k = ops::Const(root, RandomOperand(2));
  Output v = ops::Const(root, RandomOperand(3));
  Output lengths =
      ops::Const(root, Tensor::FromVector<int32_t>(std::vector<int32_t>(kBatch, kTime)));
  ops::FusedAttentionOutputs forward =
      ops::FusedAttention(root.WithOpName("forward"), q, k, v, lengths, attrs);
  ops::FusedAttentionGrad(root.WithOpName("backward"), q, k, v, lengths, forward.output,
                          forward.logsumexp, ops::Const(root, RandomOperand(4)), attrs);
  SessionOptions options;
  options.config.set_intra_op_parallelism_threads(static_cast<int>(state.range(0)));
  options.config.set_inter_op_parallelism_threads(1);
  auto session = NewSession(options).value();
  if (!session->Create(root.ToGraphDef().value()).ok()) std::abort();
  const std::vector<std::string> targets = {with_gradient ? "backward" : "forward"};
  std::vector<Tensor> outputs;
  if (!session->Run({}, {}, targets, &outputs).ok()) std::abort();
  for (auto _ : state) {
    Status status = session->Run({}, {}, targets, &outputs);
    benchmark::DoNotOptimize(status);
  }
}

void BM_FusedAttention(benchmark::State& state) { RunAttention(state, false); }
void BM_FusedAttentionWithGradient(benchmark::State& state) { RunAttention(state, true); }

BENCHMARK(BM_FusedAttention)->ArgsProduct({{1, 2}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FusedAttentionWithGradient)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace weft

BENCHMARK_MAIN();
