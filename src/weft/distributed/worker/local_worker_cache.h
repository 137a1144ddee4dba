// An in-process cluster: a WorkerCacheInterface over Workers living in this process, by task name.
// Used by tests and by a cluster run inside one process. Immutable; thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "weft/distributed/worker/worker_cache.h"

namespace weft {

// `workers`: task name ("/job:worker/replica:0/task:1") -> its worker, not owned; they must outlive
// the cache. TaskAddress is "in-process" for every known task.
std::unique_ptr<WorkerCacheInterface> NewLocalWorkerCache(
    std::map<std::string, WorkerInterface*> workers);

}  // namespace weft
