// Timer: runs callbacks after a delay on one thread of its own, so that a deadline (a step's, a
// group resolution's) or a periodic round (liveness probes, heartbeats) needs no thread blocked
// waiting for it. Callbacks must be short: every callback of a timer runs on its one thread (they
// cancel calls and report errors). Thread-safe. The destructor drops callbacks that have not run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "weft/core/mutex.h"

namespace weft {

class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Runs `callback` on the timer's thread in `delay_ms` milliseconds; returns an id for Cancel.
  int64_t Schedule(int64_t delay_ms, std::function<void()> callback);
  // Drops the callback when it has not started; returns whether it was dropped.
  bool Cancel(int64_t id);

  // Test hook: runs on the timer's thread, under the timer's lock (so it must not call the timer),
  // each time the thread is about to wait for the earliest pending deadline.
  void SetBeforeWaitHookForTesting(std::function<void()> hook);

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    Clock::time_point when;
    std::function<void()> callback;
  };
  void Loop();

  Mutex mu_;
  CondVar changed_;
  std::map<int64_t, Entry> entries_ WEFT_GUARDED_BY(mu_);  // by id
  int64_t next_id_ WEFT_GUARDED_BY(mu_) = 1;
  bool stopping_ WEFT_GUARDED_BY(mu_) = false;
  std::function<void()> before_wait_hook_ WEFT_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace weft
