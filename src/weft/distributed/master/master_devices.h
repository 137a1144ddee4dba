// Device discovery for the master: asks every task of a cluster for its devices (GetStatus) in
// parallel, waiting for tasks that are still starting up. Stateless; safe from any thread. Blocks
// the calling thread (call it from a pool, not from an RPC callback).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distributed/worker/worker_cache.h"
#include "weft/worker.pb.h"

namespace weft {

// The devices of every task of `cache`, those of `local_task` first (the first device is the
// default one for unplaced nodes), then the other tasks in ListWorkers order. A task that does not
// answer within `timeout_ms` (or fails) gives Unavailable("worker <task> at <address> did not
// answer within N ms: <cause>").
StatusOr<std::vector<proto::DeviceAttributes>> DiscoverDevices(WorkerCacheInterface* cache,
                                                               const std::string& local_task,
                                                               int64_t timeout_ms);

// "/job:worker/replica:0/task:1" for "/job:worker/replica:0/task:1/device:CPU:0" (TaskOfDevice,
// runtime/trace/step_stats_collector.h, is its lenient form for names that may lack a task);
// InvalidArgument naming the device when the name is not a full device name.
StatusOr<std::string> ParseTaskOfDevice(const std::string& device_name);

}  // namespace weft
