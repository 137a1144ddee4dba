// WorkerLiveness: finds a worker that is alive but silent (stopped, wedged, cut off) while steps
// wait on it, as the reference's keep-alive does. While `active()` says steps are running, every
// IntervalMs(timeout) it sends GetStatus to each watched task with a deadline of timeout - interval
// (one probe per task in flight); a probe failing with DeadlineExceeded or Unavailable, or still
// unanswered at its deadline (a transport that ignores deadlines), goes to `on_failure`. A worker
// that stops answering is so reported at most `timeout` after it stopped, off the steps' path: a
// step adds no RPC. Thread-safe; Stop() before what Options points to goes away.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/timer.h"
#include "weft/distributed/worker/worker_cache.h"

namespace weft {

class WorkerLiveness : public std::enable_shared_from_this<WorkerLiveness> {
 public:
  struct Options {
    std::vector<std::string> tasks;                // the tasks to probe (not the master's own)
    WorkerCacheInterface* worker_cache = nullptr;  // not owned
    Timer* timer = nullptr;                        // not owned
    int64_t timeout_ms = 30000;
    std::function<bool()> active;  // whether steps are running; called on the timer's thread
    // Called once per failed probe, on the thread that completes it or on the timer's thread;
    // never after Stop() returns.
    std::function<void(const std::string& task, const Status& status)> on_failure;
  };

  // Starts probing (the first round one interval from now).
  static std::shared_ptr<WorkerLiveness> Start(Options options);
  ~WorkerLiveness();
  WorkerLiveness(const WorkerLiveness&) = delete;
  WorkerLiveness& operator=(const WorkerLiveness&) = delete;

  // Stops probing, cancels the probes in flight and waits for their callbacks. Idempotent.
  void Stop();

  // Time between rounds: a quarter of the timeout, between 10 ms and 5 s.
  static int64_t IntervalMs(int64_t timeout_ms);

 private:
  struct Probe;
  explicit WorkerLiveness(Options options);
  void ScheduleRound();
  void Round();
  void OnProbeDone(const std::string& task, const std::shared_ptr<Probe>& probe,
                   const Status& status);

  const Options options_;
  const int64_t interval_ms_;

  Mutex mu_;
  CondVar probes_done_;
  bool stopped_ WEFT_GUARDED_BY(mu_) = false;
  int64_t timer_id_ WEFT_GUARDED_BY(mu_) = 0;
  int reporting_ WEFT_GUARDED_BY(mu_) = 0;  // Round()s calling on_failure
  std::map<std::string, std::shared_ptr<Probe>> in_flight_ WEFT_GUARDED_BY(mu_);  // by task
};

}  // namespace weft
