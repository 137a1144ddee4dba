// ThreadPool: a fixed set of worker threads running scheduled closures in FIFO order, plus
// ParallelFor, which shards a range over the workers and the calling thread. All methods are
// thread-safe. The destructor runs every closure already scheduled, then joins the workers.
// Do not call ParallelFor from a closure running on the same pool when every worker may be doing
// so (it waits for shards queued behind it); the runtime keeps inter-op and intra-op pools apart.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace weft {

class ThreadPool {
 public:
  ThreadPool(std::string name, int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> fn);
  int NumThreads() const { return static_cast<int>(workers_.size()); }
  const std::string& name() const { return name_; }

  // Runs fn(begin, end) over shards covering [0, total). `cost_per_unit` is a rough cost of one
  // unit in nanoseconds; small ranges run inline on the caller. Returns when every shard has run.
  void ParallelFor(int64_t total, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn);

  // Index of the calling thread within this pool, or -1 when called from another thread.
  int CurrentThreadIndex() const;

 private:
  void WorkerLoop(int index);

  const std::string name_;
  std::mutex mu_;
  std::condition_variable work_available_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace weft
