// CancellationManager: one per step. StartCancel() runs every registered callback once and makes
// IsCancelled() true; a callback registered after that is refused (RegisterCallback returns false)
// so the caller cancels itself. Thread-safe. Callbacks run outside the lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>

#include "weft/core/mutex.h"

namespace weft {

class CancellationManager {
 public:
  using Token = int64_t;
  using Callback = std::function<void()>;

  CancellationManager() = default;
  CancellationManager(const CancellationManager&) = delete;
  CancellationManager& operator=(const CancellationManager&) = delete;

  void StartCancel();
  bool IsCancelled() const { return cancelled_.load(std::memory_order_acquire); }

  Token NewToken() { return next_token_.fetch_add(1); }
  // Returns false (and does not register) when cancellation has already started.
  bool RegisterCallback(Token token, Callback callback);
  // Returns true when the callback was removed before it ran.
  bool DeregisterCallback(Token token);

 private:
  std::atomic<bool> cancelled_{false};
  std::atomic<Token> next_token_{0};
  Mutex mu_;
  std::map<Token, Callback> callbacks_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft
