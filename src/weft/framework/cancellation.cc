#include "weft/framework/cancellation.h"

#include "weft/core/mutex.h"

namespace weft {

void CancellationManager::StartCancel() {
  std::map<Token, Callback> to_run;
  {
    MutexLock lock(mu_);
    if (cancelled_.load()) return;
    cancelled_.store(true, std::memory_order_release);
    to_run.swap(callbacks_);
  }
  for (auto& [token, callback] : to_run) callback();
}

bool CancellationManager::RegisterCallback(Token token, Callback callback) {
  MutexLock lock(mu_);
  if (cancelled_.load()) return false;
  callbacks_.emplace(token, std::move(callback));
  return true;
}

bool CancellationManager::DeregisterCallback(Token token) {
  MutexLock lock(mu_);
  return callbacks_.erase(token) > 0;
}

}  // namespace weft
