#include "weft/cli/worker_cluster.h"

#include <cstdio>

#include <unistd.h>

#include "weft/cli/launch_command.h"
#include "weft/core/net/free_ports.h"
#include "weft/core/str_util.h"

namespace weft::cli {

StatusOr<ServerConfig> MeetAtCoordinator(const ResolvedCluster& resolved, int64_t timeout_ms,
                                         const char* program,
                                         std::unique_ptr<AddressExchangeServer>* coordinator) {
  // Free on every interface, so free on the one bound. The port could be taken before the server
  // binds it; the server then fails to start, naming it.
  WEFT_ASSIGN_OR_RETURN(std::vector<int> ports, net::PickFreePorts(1, "0.0.0.0"));
  std::string host = resolved.host;
  if (host.empty()) {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0) return Unavailable("gethostname failed");
    host = name;
  }
  const std::string own_address = StrCat(host, ":", ports[0]);
  std::fprintf(stderr, "%s: %s rank %d of %d at %s, meeting at the coordinator %s\n", program,
               std::string(ClusterSourceName(resolved.source)).c_str(), resolved.rank,
               resolved.world_size, own_address.c_str(), resolved.coordinator.c_str());
  ServerConfig config;
  WEFT_ASSIGN_OR_RETURN(config.cluster,
                        RendezvousCluster(resolved, own_address, timeout_ms, coordinator));
  config.task = {"worker", resolved.rank};
  return config;
}

StatusOr<WorkerCluster> ResolveWorkerCluster(const std::string& coordinator_flag,
                                             int64_t timeout_ms, const char* program) {
  WEFT_ASSIGN_OR_RETURN(ResolvedCluster resolved,
                        ResolveCluster(ProcessEnvironment(), ResolveOptions{coordinator_flag}));
  WorkerCluster cluster;
  cluster.devices_per_worker = resolved.devices_per_worker;
  if (resolved.NeedsRendezvous()) {
    WEFT_ASSIGN_OR_RETURN(cluster.config,
                          MeetAtCoordinator(resolved, timeout_ms, program, &cluster.coordinator));
    return cluster;
  }
  if (resolved.source == ClusterSource::kNone) {
    return FailedPrecondition(
        "no cluster: run under `weft launch --workers N` (with `--ps M` for parameter-server "
        "training), set WEFT_CONFIG or TF_CONFIG, or start as a Slurm (srun) or Open MPI (mpirun) "
        "rank with --coordinator HOST:PORT");
  }
  cluster.config = resolved.config;
  WEFT_RETURN_IF_ERROR(ValidateTask(cluster.config.cluster, cluster.config.task));
  return cluster;
}

}  // namespace weft::cli
