#include "weft/core/thread_pool.h"

#include <algorithm>
#include <atomic>

#include "weft/core/logging.h"
#include "weft/core/notification.h"

namespace weft {
namespace {

thread_local const ThreadPool* current_pool = nullptr;
thread_local int current_index = -1;

// Shards cheaper than this many nanoseconds of work are not worth a thread hand-off (~30 us here).
constexpr int64_t kMinShardCostNanos = 50'000;

}  // namespace

ThreadPool::ThreadPool(std::string name, int num_threads) : name_(std::move(name)) {
  WEFT_CHECK(num_threads >= 1) << "thread pool '" << name_ << "' needs at least one thread";
  workers_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_available_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::Schedule(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
  }
  work_available_.notify_one();
}

int ThreadPool::CurrentThreadIndex() const { return current_pool == this ? current_index : -1; }

void ThreadPool::WorkerLoop(int index) {
  current_pool = this;
  current_index = index;
  while (true) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_available_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

void ThreadPool::ParallelFor(int64_t total, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (total <= 0) return;
  int64_t max_shards = NumThreads() + 1;
  int64_t by_cost =
      std::max<int64_t>(1, total * std::max<int64_t>(cost_per_unit, 1) / kMinShardCostNanos);
  int64_t shards = std::min({max_shards, by_cost, total});
  if (shards <= 1) {
    fn(0, total);
    return;
  }
  int64_t shard_size = (total + shards - 1) / shards;
  std::atomic<int64_t> remaining{shards - 1};
  Notification all_done;
  for (int64_t s = 1; s < shards; ++s) {
    int64_t begin = s * shard_size;
    int64_t end = std::min(total, begin + shard_size);
    Schedule([&, begin, end] {
      if (begin < end) fn(begin, end);
      if (remaining.fetch_sub(1) == 1) all_done.Notify();
    });
  }
  fn(0, std::min(total, shard_size));
  all_done.WaitForNotification();
}

}  // namespace weft
