#include "weft/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "weft/core/logging.h"
#include "weft/core/mutex.h"
#include "weft/core/notification.h"

namespace weft {
namespace {

thread_local const ThreadPool* current_pool = nullptr;
thread_local int current_index = -1;

// Shards cheaper than this many nanoseconds of work are not worth a thread hand-off (~30 us here).
constexpr int64_t kMinShardCostNanos = 50'000;

// Polls `done` for up to `spin_micros`, yielding the core between polls; returns done().
template <typename Done>
bool SpinUntil(int64_t spin_micros, Done&& done) {
  if (spin_micros <= 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_micros);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

ThreadPool::ThreadPool(std::string name, int num_threads, int64_t spin_micros)
    : name_(std::move(name)), spin_micros_(spin_micros) {
  WEFT_CHECK(num_threads >= 1) << "thread pool '" << name_ << "' needs at least one thread";
  workers_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

ThreadPool::~ThreadPool() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  work_available_.NotifyAll();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::Schedule(std::function<void()> fn) {
  bool wake;
  {
    MutexLock lock(mu_);
    queue_.push_back(std::move(fn));
    queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_release);
    // A spinning worker takes the closure without a wake-up; wake a sleeper only for what the
    // spinners cannot cover. (A spinner that gives up re-checks the queue under mu_ first.)
    wake = sleeping_ > 0 &&
           static_cast<int64_t>(queue_.size()) > spinning_.load(std::memory_order_acquire);
  }
  if (wake) work_available_.NotifyOne();
}

bool ThreadPool::SpinForWork() {
  spinning_.fetch_add(1, std::memory_order_acq_rel);
  const bool found =
      SpinUntil(spin_micros_, [this] { return queued_.load(std::memory_order_acquire) > 0; });
  spinning_.fetch_sub(1, std::memory_order_acq_rel);
  return found;
}

int ThreadPool::CurrentThreadIndex() const { return current_pool == this ? current_index : -1; }

void ThreadPool::WorkerLoop(int index) {
  current_pool = this;
  current_index = index;
  while (true) {
    std::function<void()> fn;
    if (queued_.load(std::memory_order_acquire) == 0) SpinForWork();
    {
      MutexLock lock(mu_);
      ++sleeping_;
      while (!stopping_ && queue_.empty()) work_available_.Wait(lock);
      --sleeping_;
      if (queue_.empty()) return;  // stopping and drained
      fn = std::move(queue_.front());
      queue_.pop_front();
      queued_.store(static_cast<int64_t>(queue_.size()), std::memory_order_release);
    }
    fn();
  }
}

void ThreadPool::ParallelFor(int64_t total, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn, int max_shards) {
  if (total <= 0) return;
  if (CurrentThreadIndex() >= 0) {  // on one of our workers: shards queued behind it could wait
    fn(0, total);
    return;
  }
  if (max_shards <= 0) max_shards = NumThreads() + 1;
  int64_t by_cost =
      std::max<int64_t>(1, total * std::max<int64_t>(cost_per_unit, 1) / kMinShardCostNanos);
  int64_t shards = std::min({int64_t{max_shards}, by_cost, total});
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
  // Spin on the notification itself (not on `remaining`): the last shard touches all_done after
  // its decrement, so all_done must outlive that.
  if (!SpinUntil(spin_micros_, [&] { return all_done.HasBeenNotified(); })) {
    all_done.WaitForNotification();
  }
}

}  // namespace weft
