#include "weft/distributed/master_calls.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "weft/core/str_util.h"

namespace weft {
namespace {

struct FanOut {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<Status> statuses;
  std::vector<bool> finished;
  size_t pending = 0;
};

}  // namespace

std::vector<Status> CallEveryTask(size_t count,
                                  const std::function<void(size_t, StatusCallback)>& start,
                                  int64_t timeout_ms) {
  auto fan_out = std::make_shared<FanOut>();
  fan_out->statuses.resize(count);
  fan_out->finished.assign(count, false);
  fan_out->pending = count;
  for (size_t i = 0; i < count; ++i) {
    start(i, [fan_out, i](const Status& status) {
      std::lock_guard<std::mutex> lock(fan_out->mu);
      fan_out->statuses[i] = status;
      fan_out->finished[i] = true;
      --fan_out->pending;
      fan_out->changed.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(fan_out->mu);
  auto all_done = [&] { return fan_out->pending == 0; };
  if (timeout_ms > 0) {
    fan_out->changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), all_done);
  } else {
    fan_out->changed.wait(lock, all_done);
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

bool IsDerivedError(const Status& status) { return IsCancelled(status) || IsAborted(status); }

bool IsUnreachable(const Status& status) {
  return IsDeadlineExceeded(status) || IsUnavailable(status);
}

}  // namespace weft
