// Executor overhead per node (workload W5): a chain and a wide fan of 1,000 tiny Adds run through
// a DirectSession with one inter-op and one intra-op thread, and the chain traced (RunOptions
// FULL_TRACE, step stats in the RunMetadata): what recording every node costs.
#include <benchmark/benchmark.h>

#include "weft/graph/builder/ops.h"
#include "weft/runtime/session.h"

namespace weft {
namespace {

constexpr int kNodes = 1000;

std::unique_ptr<Session> SingleThreadedSession(const proto::GraphDef& graph) {
  SessionOptions options;
  options.config.set_inter_op_parallelism_threads(1);
  options.config.set_intra_op_parallelism_threads(1);
  auto session = NewSession(options).value();
  Status status = session->Create(graph);
  if (!status.ok()) std::abort();
  return session;
}

void RunSteps(benchmark::State& state, Session& session, const std::vector<std::string>& fetches,
              const std::vector<std::string>& targets, bool traced = false) {
  std::vector<Tensor> outputs;
  proto::RunOptions options;
  if (traced) options.set_trace_level(proto::RunOptions::FULL_TRACE);
  proto::RunMetadata metadata;
  // The first run builds and caches the executor.
  Status warm = session.Run(options, {}, fetches, targets, &outputs, &metadata);
  if (!warm.ok()) state.SkipWithError(warm.ToString().c_str());
  for (auto _ : state) {
    metadata.Clear();
    Status status = session.Run(options, {}, fetches, targets, &outputs, &metadata);
    benchmark::DoNotOptimize(status);
  }
  state.counters["nodes"] = kNodes;
}

proto::GraphDef ChainGraph() {
  Scope root = Scope::NewRootScope();
  Output one = ops::Const(root, 1.0f);
  Output sum = one;
  for (int i = 0; i < kNodes; ++i) sum = ops::Add(root, sum, one);
  ops::Identity(root.WithOpName("result"), sum);
  return root.ToGraphDef().value();
}

// x_{i+1} = x_i + one, 1,000 times.
void BM_ExecutorChain(benchmark::State& state) {
  auto session = SingleThreadedSession(ChainGraph());
  RunSteps(state, *session, {"result"}, {});
}
BENCHMARK(BM_ExecutorChain)->Unit(benchmark::kMicrosecond);

// The same chain with every node traced.
void BM_ExecutorChainTraced(benchmark::State& state) {
  auto session = SingleThreadedSession(ChainGraph());
  RunSteps(state, *session, {"result"}, {}, /*traced=*/true);
}
BENCHMARK(BM_ExecutorChainTraced)->Unit(benchmark::kMicrosecond);

// 1,000 independent Adds of one constant, all gathered by a NoOp's control edges.
void BM_ExecutorFan(benchmark::State& state) {
  Scope root = Scope::NewRootScope();
  Output one = ops::Const(root, 1.0f);
  std::vector<Output> adds;
  for (int i = 0; i < kNodes; ++i) adds.push_back(ops::Add(root, one, one));
  ops::NoOp(root.WithOpName("done").WithControlDependencies(adds));
  auto session = SingleThreadedSession(root.ToGraphDef().value());
  RunSteps(state, *session, {}, {"done"});
}
BENCHMARK(BM_ExecutorFan)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace weft

BENCHMARK_MAIN();
