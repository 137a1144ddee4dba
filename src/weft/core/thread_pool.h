// ThreadPool: a fixed set of worker threads running scheduled closures in FIFO order, plus
// ParallelFor, which shards a range over the workers and the calling thread. All methods are
// thread-safe. The destructor runs every closure already scheduled, then joins the workers.
// With a spin time, an idle worker (and a ParallelFor caller waiting for its shards) keeps polling,
// yielding its core, that long before it sleeps: waking a sleeping thread on the other core costs
// about 30 us each way here, as much as a small GEMM.
// ParallelFor called from one of the pool's own workers runs the whole range inline, so nested
// parallel loops never wait on shards queued behind themselves.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "weft/core/mutex.h"

namespace weft {

class ThreadPool {
 public:
  // `spin_micros`: how long an idle thread polls before it sleeps (0: sleeps at once).
  ThreadPool(std::string name, int num_threads, int64_t spin_micros = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> fn);
  int NumThreads() const { return static_cast<int>(workers_.size()); }
  const std::string& name() const { return name_; }

  // Runs fn(begin, end) over shards covering [0, total). `cost_per_unit` is a rough cost of one
  // unit in nanoseconds; small ranges run inline on the caller. At most `max_shards` shards
  // (0: one per worker plus the caller). Returns when every shard has run.
  void ParallelFor(int64_t total, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn, int max_shards = 0);

  // Index of the calling thread within this pool, or -1 when called from another thread.
  int CurrentThreadIndex() const;

 private:
  void WorkerLoop(int index);
  // Polls for queued work for up to spin_micros_; returns whether some appeared.
  bool SpinForWork();

  const std::string name_;
  const int64_t spin_micros_;
  Mutex mu_;
  CondVar work_available_;
  std::deque<std::function<void()>> queue_ WEFT_GUARDED_BY(mu_);
  bool stopping_ WEFT_GUARDED_BY(mu_) = false;
  int sleeping_ WEFT_GUARDED_BY(mu_) = 0;  // workers waiting on work_available_
  std::atomic<int64_t> queued_{0};         // queue_.size(), readable without mu_
  std::atomic<int> spinning_{0};           // workers in SpinForWork
  std::vector<std::thread> workers_;
};

}  // namespace weft
