// WorkerCacheInterface: finds the WorkerInterface of a task by its name
// ("/job:worker/replica:0/task:1"). Workers are created on first use and kept for the cache's
// lifetime; the cache of a server returns its own in-process Worker for its own task. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "weft/distributed/worker/worker_interface.h"

namespace weft {

class WorkerCacheInterface {
 public:
  virtual ~WorkerCacheInterface() = default;

  // Every task of the cluster, "/job:<job>/replica:0/task:<i>", jobs in name order.
  virtual std::vector<std::string> ListWorkers() const = 0;
  // The worker of `task_name`, owned by the cache; null when the cluster has no such task.
  virtual WorkerInterface* GetOrCreateWorker(const std::string& task_name) = 0;
  // The "host:port" of `task_name`, for messages; "" when unknown.
  virtual std::string TaskAddress(const std::string& task_name) const = 0;
};

}  // namespace weft
