#include "weft/runtime/session.h"

#include <map>

#include "weft/core/mutex.h"
#include "weft/runtime/direct_session.h"

namespace weft {
namespace {

Mutex& FactoriesMutex() {
  static Mutex mu;
  return mu;
}

std::map<std::string, SessionFactory>& Factories() {
  static auto* factories = new std::map<std::string, SessionFactory>();
  return *factories;
}

}  // namespace

void RegisterSessionFactory(const std::string& scheme, SessionFactory factory) {
  MutexLock lock(FactoriesMutex());
  Factories()[scheme] = std::move(factory);
}

StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options) {
  if (options.target.empty()) return NewDirectSession(options);
  SessionFactory factory;
  {
    MutexLock lock(FactoriesMutex());
    for (const auto& [scheme, candidate] : Factories()) {
      if (options.target.starts_with(scheme)) factory = candidate;
    }
  }
  if (!factory) {
    return InvalidArgument("no session implementation serves target '", options.target,
                           "' (use \"\" for an in-process session)");
  }
  return factory(options);
}

}  // namespace weft
