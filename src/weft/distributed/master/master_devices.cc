#include "weft/distributed/master/master_devices.h"

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

StatusOr<std::vector<proto::DeviceAttributes>> DiscoverDevices(WorkerCacheInterface* cache,
                                                               const std::string& local_task,
                                                               int64_t timeout_ms) {
  std::vector<std::string> tasks = cache->ListWorkers();
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
  std::vector<proto::DeviceAttributes> local;
  std::vector<proto::DeviceAttributes> remote;
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
    for (const auto& device : call->response.device_attributes()) {
      (call->task == local_task ? local : remote).push_back(device);
    }
  }
  local.insert(local.end(), remote.begin(), remote.end());
  return local;
}

}  // namespace weft
