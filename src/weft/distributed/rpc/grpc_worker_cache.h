// NewGrpcWorkerCache: the WorkerCacheInterface of a server. Peers are reached over gRPC (one
// channel and GrpcRemoteWorker per task, made on first use and kept); the server's own task is its
// in-process worker, called directly. Channels use `security`'s TLS and calls carry its token.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/rpc/bulk_transfer.h"
#include "weft/distributed/rpc/transport_security.h"
#include "weft/distributed/worker/worker_cache.h"

namespace weft {

// `local_task` ("/job:worker/replica:0/task:0") may be "" (a client-only cache); `local_worker`
// must outlive the cache. `bulk_client` may be null (large tensors then travel inside gRPC).
std::unique_ptr<WorkerCacheInterface> NewGrpcWorkerCache(
    ClusterSpec cluster, std::string local_task, WorkerInterface* local_worker,
    std::shared_ptr<BulkTransferClient> bulk_client, TransportSecurity security);

}  // namespace weft
