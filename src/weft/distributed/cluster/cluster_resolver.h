// ResolveCluster: where a worker process finds its cluster, its task and its devices, from the
// environment given as a map (so tests never touch the real one). Sources, first match wins:
// WEFT_CONFIG, TF_CONFIG, Slurm (SLURM_PROCID...), Open MPI (OMPI_COMM_WORLD_RANK...). Every
// malformed value is an InvalidArgument naming the variable and the bad part. Stateless;
// thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "weft/core/statusor.h"
#include "weft/distributed/cluster/cluster_spec.h"

namespace weft {

using Environment = std::map<std::string, std::string>;

// A copy of this process's environment (`environ`).
Environment ProcessEnvironment();

enum class ClusterSource { kNone, kWeftConfig, kTfConfig, kSlurm, kOpenMpi };
std::string_view ClusterSourceName(ClusterSource source);

struct ResolveOptions {
  // The coordinator's "HOST:PORT" from a flag; wins over WEFT_COORDINATOR. Under Slurm a bare
  // ":PORT" means the first node of the step's node list.
  std::string coordinator;
};

struct ResolvedCluster {
  ClusterSource source = ClusterSource::kNone;
  // WEFT_CONFIG and TF_CONFIG: the whole cluster and this task. Empty for the other sources.
  ServerConfig config;
  // WEFT_DEVICES_PER_WORKER (a positive integer); 0 when unset.
  int devices_per_worker = 0;

  // Slurm and Open MPI: this worker's rank among `world_size`; the cluster itself comes from the
  // coordinator (address_exchange.h), where every rank registers its own address.
  int rank = 0;
  int world_size = 0;
  int local_rank = 0;       // SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK; 0 when unset
  std::string coordinator;  // "host:port" with a port in [1, 65535]
  std::string host;         // the host to advertise: WEFT_HOST, else this Slurm node; else ""

  bool NeedsRendezvous() const {
    return source == ClusterSource::kSlurm || source == ClusterSource::kOpenMpi;
  }
};

StatusOr<ResolvedCluster> ResolveCluster(const Environment& env,
                                         const ResolveOptions& options = {});

// The reference system's TF_CONFIG, read with the reference's two meanings of "chief" (at most
// one task; task type "chief" must have index 0 and a "chief" job to be in):
// - With a "ps" job (ParameterServerStrategy) the chief is the coordinator, a job of its own:
//   "chief" task 0, and workers keep their indices.
// - Without one (MultiWorkerMirroredStrategy) the chief is one more worker: it becomes task 0 of
//   the "worker" job and the reference's worker i is Weft's worker i+1.
// Other jobs keep their names; a job with no tasks and an "evaluator" task (which joins no
// cluster) are refused. WEFT_CONFIG (ParseWeftConfig) is taken as written: a chief stays "chief".
StatusOr<ServerConfig> ParseTfConfig(std::string_view json_text);

}  // namespace weft
