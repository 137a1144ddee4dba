// CallOptions: what a caller may do to an RPC in flight — give it a deadline and cancel it. The
// transport registers a cancel callback for the duration of the call; StartCancel runs it (once)
// or, when no call is in flight yet, makes the next registration run it at once. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>

#include "weft/core/mutex.h"

namespace weft {

class CallOptions {
 public:
  using CancelCallback = std::function<void()>;

  void StartCancel();
  // Runs `callback` at once (outside the lock) when StartCancel already happened.
  void SetCancelCallback(CancelCallback callback);
  void ClearCancelCallback();
  bool IsCancelled() const;

  // Deadline of the call in milliseconds from its start; 0 means none.
  int64_t timeout_ms() const { return timeout_ms_; }
  void set_timeout_ms(int64_t timeout_ms) { timeout_ms_ = timeout_ms; }

  // Wait for an unreachable peer (until the deadline) instead of failing at once.
  bool wait_for_ready() const { return wait_for_ready_; }
  void set_wait_for_ready(bool wait) { wait_for_ready_ = wait; }

 private:
  mutable Mutex mu_;
  bool cancelled_ WEFT_GUARDED_BY(mu_) = false;
  CancelCallback cancel_callback_ WEFT_GUARDED_BY(mu_);
  int64_t timeout_ms_ = 0;
  bool wait_for_ready_ = false;
};

}  // namespace weft
