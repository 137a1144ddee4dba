// Helpers for the master's fan-out calls to the tasks of a cluster: start one asynchronous call
// per task and wait for them all, and mark an error with the task it came from. Stateless; safe
// from any thread. CallEveryTask blocks: call it from a pool.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "weft/distributed/worker_interface.h"

namespace weft {

// Runs start(i, done) for every i < count and waits until every `done` has run, or at most
// `timeout_ms` (0: no limit); calls still running then count as DeadlineExceeded. With a limit,
// whatever a late call writes must be owned by its `done` (captured), not by the caller.
std::vector<Status> CallEveryTask(size_t count,
                                  const std::function<void(size_t, StatusCallback)>& start,
                                  int64_t timeout_ms = 0);

// `status` with " (from worker <task>)" appended to its message; the code is kept.
Status FromWorker(const Status& status, const std::string& task);

// Cancelled and Aborted errors are usually a consequence of another failure (a cancelled step, an
// aborted rendezvous): the root cause is reported in preference to them.
bool IsDerivedError(const Status& status);

}  // namespace weft
