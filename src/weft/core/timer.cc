#include "weft/core/timer.h"

#include <utility>

#include "weft/core/mutex.h"

namespace weft {

Timer::Timer() : thread_([this] { Loop(); }) {}

Timer::~Timer() {
  std::map<int64_t, Entry> dropped;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    dropped.swap(entries_);
  }
  changed_.NotifyAll();
  thread_.join();
  // Destroyed outside the lock, like every callback here (see Loop).
  dropped.clear();
}

int64_t Timer::Schedule(int64_t delay_ms, std::function<void()> callback) {
  int64_t id;
  {
    MutexLock lock(mu_);
    id = next_id_++;
    entries_[id] = Entry{Clock::now() + std::chrono::milliseconds(delay_ms), std::move(callback)};
  }
  changed_.NotifyAll();
  return id;
}

bool Timer::Cancel(int64_t id) {
  std::function<void()> dropped;
  {
    MutexLock lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    dropped = std::move(it->second.callback);
    entries_.erase(it);
  }
  return true;  // `dropped` goes after the lock is released (see Loop)
}

void Timer::SetBeforeWaitHookForTesting(std::function<void()> hook) {
  MutexLock lock(mu_);
  before_wait_hook_ = std::move(hook);
}

void Timer::Loop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    // Few entries are pending at once (one per running step with a deadline): a scan is enough.
    auto earliest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (earliest == entries_.end() || it->second.when < earliest->second.when) earliest = it;
    }
    if (earliest == entries_.end()) {
      changed_.Wait(lock);
      continue;
    }
    // A copy: the entry may be cancelled (erased) while this thread waits.
    const Clock::time_point when = earliest->second.when;
    if (when > Clock::now()) {
      if (before_wait_hook_) before_wait_hook_();
      changed_.WaitUntil(lock, when);
      continue;
    }
    std::function<void()> callback = std::move(earliest->second.callback);
    entries_.erase(earliest);
    lock.Unlock();
    callback();
    // Its captures may hold the last reference to something that stops using this timer (a
    // session's liveness cancels its round): they must go before the lock is taken again.
    callback = nullptr;
    lock.Lock();
  }
}

}  // namespace weft
