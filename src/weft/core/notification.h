// Notification: a one-shot event. Notify() once; any number of threads may wait. Thread-safe.
#pragma once

#include <chrono>

#include "weft/core/mutex.h"

namespace weft {

class Notification {
 public:
  void Notify() {
    MutexLock lock(mu_);
    notified_ = true;
    cv_.NotifyAll();
  }
  bool HasBeenNotified() const {
    MutexLock lock(mu_);
    return notified_;
  }
  void WaitForNotification() const {
    MutexLock lock(mu_);
    while (!notified_) cv_.Wait(lock);
  }
  // Returns whether the notification came before the timeout.
  bool WaitForNotificationWithTimeout(std::chrono::microseconds timeout) const {
    MutexLock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!notified_ && cv_.WaitUntil(lock, deadline)) {
    }
    return notified_;
  }

 private:
  mutable Mutex mu_;
  mutable CondVar cv_;
  bool notified_ WEFT_GUARDED_BY(mu_) = false;
};

}  // namespace weft
