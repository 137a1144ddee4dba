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

// The tasks of a session, in the order their devices are listed (the first device is the default
// one for unplaced nodes). With no filter: every task of `all`, `local_task` first, then the others
// in order. With filters (ConfigProto.device_filters: "/job:ps", "/job:worker/task:1"; a part left
// out matches any): the tasks that match one, in the order of the first filter each matches.
// InvalidArgument for a filter that does not parse or names a device, or one that no task matches
// (naming the filter and the tasks).
StatusOr<std::vector<std::string>> SessionTasks(const std::vector<std::string>& all,
                                                const std::string& local_task,
                                                const std::vector<std::string>& filters);

// The devices of `tasks`, task by task in that order. A task that does not answer within
// `timeout_ms` (or fails) gives Unavailable("worker <task> at <address> did not answer within N
// ms: <cause>").
StatusOr<std::vector<proto::DeviceAttributes>> DiscoverDevices(
    WorkerCacheInterface* cache, const std::vector<std::string>& tasks, int64_t timeout_ms);

// "/job:worker/replica:0/task:1" for "/job:worker/replica:0/task:1/device:CPU:0" (TaskOfDevice,
// runtime/trace/step_stats_collector.h, is its lenient form for names that may lack a task);
// InvalidArgument naming the device when the name is not a full device name.
StatusOr<std::string> ParseTaskOfDevice(const std::string& device_name);

}  // namespace weft
