// How many functions one ClusterCoordinator dispatches per second: run as the chief of
// `weft launch --workers 2 --ps 1 -- build/bench/coordinator_bench`, it schedules --functions
// empty functions (each one step of a NoOp on the worker that takes it, through that worker's
// session: the reference's `schedule` of an empty tf.function), --in-flight of them at once on
// each worker, and prints
//   METRIC coordinator_empty_closures_per_sec <n>
// (issue 24 asks at least 10,000 over 2 workers on loopback).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "weft/distribute/coordinator/cluster_coordinator.h"
#include "weft/distribute/parameter_server_strategy.h"
#include "weft/distributed/cluster/cluster_resolver.h"
#include "weft/distributed/rpc/grpc_server.h"
#include "weft/distributed/rpc/grpc_session.h"
#include "weft/graph/builder/ops.h"

using namespace weft;  // NOLINT: a benchmark program, kept short

namespace {

int Fail(const Status& status) {
  std::fprintf(stderr, "coordinator_bench: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Empty functions per second through a ClusterCoordinator");
  int64_t functions = 20000;
  int in_flight = 4;
  app.add_option("--functions", functions, "How many to schedule (after 500 to warm up)");
  app.add_option("--in-flight", in_flight, "Functions each worker runs at once");
  CLI11_PARSE(app, argc, argv);
  RegisterGrpcSessionFactory();
  RegisterGrpcServerFactory();

  StatusOr<ResolvedCluster> cluster = ResolveCluster(ProcessEnvironment());
  if (!cluster.ok()) return Fail(cluster.status());
  distribute::ParameterServerOptions options;
  options.server = cluster->config;
  auto strategy = distribute::ParameterServerStrategy::Create(std::move(options));
  if (!strategy.ok()) return Fail(strategy.status());

  // One NoOp with no device: each worker's session places it on its worker.
  Scope root = Scope::NewRootScope();
  ops::NoOp(root.WithOpName("empty"));
  auto graph = root.ToGraphDef();
  if (!graph.ok()) return Fail(graph.status());
  const int workers = (*strategy)->num_worker_tasks();
  std::vector<std::unique_ptr<Session>> sessions;
  for (int w = 0; w < workers; ++w) {
    auto session = NewSession((*strategy)->WorkerSession(w));
    if (!session.ok()) return Fail(session.status());
    Status created = (*session)->Create(*graph);
    if (!created.ok()) return Fail(created);
    sessions.push_back(std::move(session).value());
  }
  distribute::ClusterCoordinatorOptions coordinator_options;
  coordinator_options.functions_in_flight_per_worker = in_flight;
  distribute::ClusterCoordinator coordinator(workers, coordinator_options);
  auto run = [&](int64_t count) -> Status {
    for (int64_t i = 0; i < count; ++i) {
      coordinator.Schedule([&sessions](int worker) -> distribute::FunctionResult {
        std::vector<Tensor> outputs;
        WEFT_RETURN_IF_ERROR(
            sessions[static_cast<size_t>(worker)]->Run({}, {}, {"empty"}, &outputs));
        return outputs;
      });
    }
    return coordinator.Join();
  };
  Status warm = run(500);
  if (!warm.ok()) return Fail(warm);
  const auto start = std::chrono::steady_clock::now();
  Status timed = run(functions);
  if (!timed.ok()) return Fail(timed);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("METRIC coordinator_empty_closures_per_sec %.0f\n",
              static_cast<double>(functions) / seconds);
  for (auto& session : sessions) session->Close().IgnoreError();
  return 0;
}
