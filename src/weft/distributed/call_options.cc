#include "weft/distributed/call_options.h"

namespace weft {

void CallOptions::StartCancel() {
  CancelCallback callback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    callback = std::move(cancel_callback_);
    cancel_callback_ = nullptr;
  }
  if (callback) callback();
}

void CallOptions::SetCancelCallback(CancelCallback callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cancelled_) {
      cancel_callback_ = std::move(callback);
      return;
    }
  }
  callback();
}

void CallOptions::ClearCancelCallback() {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_callback_ = nullptr;
}

bool CallOptions::IsCancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

}  // namespace weft
