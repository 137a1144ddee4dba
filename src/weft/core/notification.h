// Notification: a one-shot event. Notify() once; any number of threads may wait. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace weft {

class Notification {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  bool HasBeenNotified() const {
    std::lock_guard<std::mutex> lock(mu_);
    return notified_;
  }
  void WaitForNotification() const {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return notified_; });
  }
  // Returns whether the notification came before the timeout.
  bool WaitForNotificationWithTimeout(std::chrono::microseconds timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return notified_; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool notified_ = false;
};

}  // namespace weft
