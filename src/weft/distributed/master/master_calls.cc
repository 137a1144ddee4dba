#include "weft/distributed/master/master_calls.h"

#include <chrono>
#include <memory>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"

namespace weft {
namespace {

struct FanOut {
  Mutex mu;
  CondVar changed;
  std::vector<Status> statuses WEFT_GUARDED_BY(mu);
  std::vector<bool> finished WEFT_GUARDED_BY(mu);
  size_t pending WEFT_GUARDED_BY(mu) = 0;
};

}  // namespace

std::vector<Status> CallEveryTask(size_t count,
                                  const std::function<void(size_t, StatusCallback)>& start,
                                  int64_t timeout_ms) {
  auto fan_out = std::make_shared<FanOut>();
  {
    MutexLock lock(fan_out->mu);  // not shared yet; the lock only tells the analysis so
    fan_out->statuses.resize(count);
    fan_out->finished.assign(count, false);
    fan_out->pending = count;
  }
  for (size_t i = 0; i < count; ++i) {
    start(i, [fan_out, i](const Status& status) {
      MutexLock lock(fan_out->mu);
      fan_out->statuses[i] = status;
      fan_out->finished[i] = true;
      --fan_out->pending;
      fan_out->changed.NotifyAll();
    });
  }
  MutexLock lock(fan_out->mu);
  if (timeout_ms > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (fan_out->pending != 0 && fan_out->changed.WaitUntil(lock, deadline)) {
    }
  } else {
    while (fan_out->pending != 0) fan_out->changed.Wait(lock);
  }
  std::vector<Status> statuses = fan_out->statuses;
  for (size_t i = 0; i < count; ++i) {
    if (!fan_out->finished[i]) {
      statuses[i] = DeadlineExceeded("no answer within ", timeout_ms, " ms");
    }
  }
  return statuses;
}

Status FromWorker(const Status& status, const std::string& task) {
  if (status.ok()) return status;
  return Status(status.code(), StrCat(status.message(), " (from worker ", task, ")"));
}

bool IsUnreachable(const Status& status) {
  return IsDeadlineExceeded(status) || IsUnavailable(status);
}

}  // namespace weft
