#include "weft/distributed/master/master_devices.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
#include "weft/framework/device_name_utils.h"

namespace weft {
namespace {

// Extra time over the transport's own deadline before the master stops waiting for an answer: a
// transport that honours the deadline answers first, with its own (more precise) error.
constexpr int64_t kGraceMs = 500;

struct StatusCall {
  std::string task;
  CallOptions options;
  proto::GetStatusRequest request;
  proto::GetStatusResponse response;
  Status status;
  bool finished = false;
};

// Shared with the callbacks, so that a worker answering after the master gave up writes into
// memory that is still alive.
struct Discovery {
  Mutex mu;
  CondVar changed;
  std::vector<std::unique_ptr<StatusCall>> calls;
  int pending WEFT_GUARDED_BY(mu) = 0;
};

}  // namespace

StatusOr<std::string> ParseTaskOfDevice(const std::string& device_name) {
  WEFT_ASSIGN_OR_RETURN(ParsedDeviceName parsed, ParseDeviceName(device_name));
  if (!parsed.has_job || !parsed.has_replica || !parsed.has_task) {
    return InvalidArgument("device '", device_name, "' does not name its job, replica and task");
  }
  return StrCat("/job:", parsed.job, "/replica:", parsed.replica, "/task:", parsed.task);
}

StatusOr<std::vector<std::string>> SessionTasks(const std::vector<std::string>& all,
                                                const std::string& local_task,
                                                const std::vector<std::string>& filters) {
  std::vector<std::string> tasks;
  if (filters.empty()) {
    if (std::find(all.begin(), all.end(), local_task) != all.end()) tasks.push_back(local_task);
    for (const std::string& task : all) {
      if (task != local_task) tasks.push_back(task);
    }
    return tasks;
  }
  std::vector<ParsedDeviceName> parsed_tasks;
  for (const std::string& task : all) {
    WEFT_ASSIGN_OR_RETURN(ParsedDeviceName parsed, ParseDeviceName(task));
    parsed_tasks.push_back(std::move(parsed));
  }
  std::vector<bool> taken(all.size(), false);
  for (const std::string& filter : filters) {
    StatusOr<ParsedDeviceName> parsed = ParseDeviceName(filter);
    if (!parsed.ok()) return parsed.status().WithContext("device filter");
    if (parsed->has_type || parsed->has_id) {
      return InvalidArgument("device filter '", filter,
                             "' names a device; filters name tasks (\"/job:worker/task:1\")");
    }
    bool matched = false;
    for (size_t i = 0; i < all.size(); ++i) {
      const ParsedDeviceName& task = parsed_tasks[i];
      if ((parsed->has_job && parsed->job != task.job) ||
          (parsed->has_replica && parsed->replica != task.replica) ||
          (parsed->has_task && parsed->task != task.task)) {
        continue;
      }
      matched = true;
      if (!taken[i]) tasks.push_back(all[i]);
      taken[i] = true;
    }
    if (!matched) {
      return InvalidArgument("device filter '", filter, "' matches none of the cluster's tasks (",
                             StrJoin(all, ", "), ")");
    }
  }
  return tasks;
}

StatusOr<std::vector<proto::DeviceAttributes>> DiscoverDevices(
    WorkerCacheInterface* cache, const std::vector<std::string>& tasks, int64_t timeout_ms) {
  if (tasks.empty()) return FailedPrecondition("the cluster has no tasks to run a session on");
  auto discovery = std::make_shared<Discovery>();
  for (const std::string& task : tasks) {
    auto call = std::make_unique<StatusCall>();
    call->task = task;
    call->options.set_wait_for_ready(true);
    call->options.set_timeout_ms(timeout_ms);
    discovery->calls.push_back(std::move(call));
  }
  {
    MutexLock lock(discovery->mu);  // not shared yet; the lock only tells the analysis so
    discovery->pending = static_cast<int>(tasks.size());
  }
  for (auto& call_ptr : discovery->calls) {
    StatusCall* call = call_ptr.get();
    WorkerInterface* worker = cache->GetOrCreateWorker(call->task);
    auto finish = [discovery, call](const Status& status) {
      MutexLock lock(discovery->mu);
      call->status = status;
      call->finished = true;
      --discovery->pending;
      discovery->changed.NotifyAll();
    };
    if (worker == nullptr) {
      finish(NotFound("the worker cache knows no task ", call->task));
      continue;
    }
    worker->GetStatusAsync(&call->options, &call->request, &call->response, finish);
  }

  {
    MutexLock lock(discovery->mu);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms + kGraceMs);
    while (discovery->pending != 0 && discovery->changed.WaitUntil(lock, deadline)) {
    }
  }
  std::vector<proto::DeviceAttributes> devices;
  for (auto& call : discovery->calls) {
    Status status;
    {
      MutexLock lock(discovery->mu);
      status = call->finished ? call->status : DeadlineExceeded("no answer");
    }
    if (!status.ok()) {
      // Stop transports still retrying; their late answers land in `discovery`.
      for (auto& other : discovery->calls) other->options.StartCancel();
      return Unavailable("worker ", call->task, " at ", cache->TaskAddress(call->task),
                         " did not answer within ", timeout_ms, " ms: ", status);
    }
    for (const auto& device : call->response.device_attributes()) devices.push_back(device);
  }
  return devices;
}

}  // namespace weft
