#include "weft/distributed/call_options.h"

#include "weft/core/mutex.h"

namespace weft {

void CallOptions::StartCancel() {
  CancelCallback callback;
  {
    MutexLock lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    callback = std::move(cancel_callback_);
    cancel_callback_ = nullptr;
  }
  if (callback) callback();
}

void CallOptions::SetCancelCallback(CancelCallback callback) {
  {
    MutexLock lock(mu_);
    if (!cancelled_) {
      cancel_callback_ = std::move(callback);
      return;
    }
  }
  callback();
}

void CallOptions::ClearCancelCallback() {
  MutexLock lock(mu_);
  cancel_callback_ = nullptr;
}

bool CallOptions::IsCancelled() const {
  MutexLock lock(mu_);
  return cancelled_;
}

}  // namespace weft
