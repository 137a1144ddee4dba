// For tests whose binary re-runs itself as worker processes: the MultiWorkerMirroredStrategy of
// the cluster the process finds in its environment (WEFT_CONFIG, as the test sets it), with a
// collective timeout long enough for a loaded machine. Test-only.
#pragma once

#include <chrono>
#include <memory>

#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/distributed/cluster/cluster_resolver.h"
#include "weft/distributed/rpc/grpc_server.h"

namespace weft::train::testing {

inline StatusOr<std::unique_ptr<distribute::MultiWorkerMirroredStrategy>>
WorkerStrategyFromEnvironment() {
  RegisterGrpcServerFactory();
  StatusOr<ResolvedCluster> cluster = ResolveCluster(ProcessEnvironment());
  if (!cluster.ok()) return cluster.status();
  return distribute::MultiWorkerMirroredStrategy::Create(
      {.server = cluster->config, .collective_timeout = std::chrono::minutes(2)});
}

}  // namespace weft::train::testing
