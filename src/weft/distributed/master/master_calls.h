// Helpers for the master's fan-out calls to the tasks of a cluster: start one asynchronous call
// per task and wait for them all (with a deadline per call), and mark an error with the task it
// came from. Stateless; safe from any thread. The waits block: call them from a pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/str_util.h"
#include "weft/distributed/worker/worker_cache.h"
#include "weft/distributed/worker/worker_interface.h"

namespace weft {

// Runs start(i, done) for every i < count and waits until every `done` has run, or at most
// `timeout_ms` (0: no limit); calls still running then count as DeadlineExceeded. With a limit,
// whatever a late call writes must be owned by its `done` (captured), not by the caller.
std::vector<Status> CallEveryTask(size_t count,
                                  const std::function<void(size_t, StatusCallback)>& start,
                                  int64_t timeout_ms = 0);

// `status` with " (from worker <task>)" appended to its message; the code is kept.
Status FromWorker(const Status& status, const std::string& task);

// Whether `status` says that the worker did not answer in time or cannot be reached.
bool IsUnreachable(const Status& status);

// One call with a deadline, shared with its callback: a worker that answers after the master
// stopped waiting still writes into live memory.
template <typename Request, typename Response>
struct BoundedCall {
  CallOptions options;
  Request request;
  Response response;
};

template <typename Request, typename Response>
using WorkerMethod = void (WorkerInterface::*)(CallOptions*, const Request*, Response*,
                                               StatusCallback);

// Calls `method` of the worker of tasks[i] with calls[i] (skipped, OK, where null), each with a
// deadline of `timeout_ms`, and waits for every answer, or a little past the deadline for a
// worker that does not honour it (then cancelled: DeadlineExceeded). Each error names the task
// and its address.
// A call's response may be read where its status is OK.
template <typename Request, typename Response>
std::vector<Status> CallTasksWithDeadline(
    WorkerCacheInterface* cache, const std::vector<std::string>& tasks,
    const std::vector<std::shared_ptr<BoundedCall<Request, Response>>>& calls,
    WorkerMethod<Request, Response> method, int64_t timeout_ms) {
  constexpr int64_t kGraceMs = 1000;  // the transport's own DeadlineExceeded says more
  std::vector<Status> statuses = CallEveryTask(
      tasks.size(),
      [&](size_t i, StatusCallback done) {
        const std::shared_ptr<BoundedCall<Request, Response>>& call = calls[i];
        if (call == nullptr) return done(Status::OK());
        WorkerInterface* worker = cache->GetOrCreateWorker(tasks[i]);
        if (worker == nullptr) return done(NotFound("the worker cache knows no task ", tasks[i]));
        call->options.set_timeout_ms(timeout_ms);
        (worker->*method)(&call->options, &call->request, &call->response,
                          [call, done = std::move(done)](const Status& status) { done(status); });
      },
      timeout_ms + kGraceMs);
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (calls[i] != nullptr) calls[i]->options.StartCancel();  // no-op once answered
    const Status& status = statuses[i];
    if (!status.ok() && status.message().find(tasks[i]) == std::string::npos) {
      statuses[i] = Status(status.code(), StrCat(status.message(), " (from worker ", tasks[i],
                                                 " at ", cache->TaskAddress(tasks[i]), ")"));
    }
  }
  return statuses;
}

}  // namespace weft
