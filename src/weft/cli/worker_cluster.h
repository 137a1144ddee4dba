// Where a worker process (`weft server`, `weft train --strategy multi_worker_mirrored`) finds its
// cluster and task: WEFT_CONFIG or TF_CONFIG as they are, or a Slurm / Open MPI rank that meets the
// other ranks at the coordinator to learn their addresses (rank 0 hosts it). Not thread-safe:
// called once, at start-up.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "weft/core/statusor.h"
#include "weft/distributed/cluster/address_exchange.h"
#include "weft/distributed/cluster/cluster_resolver.h"

namespace weft::cli {

// A Slurm / Open MPI rank: picks a free port, registers "host:port" with the coordinator and
// returns the whole cluster, this rank as worker task `resolved.rank`. `program` prefixes the
// progress line on stderr. Rank 0 keeps the coordinator it hosts in `*coordinator`.
StatusOr<ServerConfig> MeetAtCoordinator(const ResolvedCluster& resolved, int64_t timeout_ms,
                                         const char* program,
                                         std::unique_ptr<AddressExchangeServer>* coordinator);

struct WorkerCluster {
  ServerConfig config;
  int devices_per_worker = 0;  // WEFT_DEVICES_PER_WORKER; 0 when unset
  std::unique_ptr<AddressExchangeServer> coordinator;
};

// This worker's cluster from the process environment; FailedPrecondition naming the variables to
// set when there is none.
StatusOr<WorkerCluster> ResolveWorkerCluster(const std::string& coordinator_flag,
                                             int64_t timeout_ms, const char* program);

}  // namespace weft::cli
