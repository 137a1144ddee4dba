#include "weft/runtime/session.h"

#include <map>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
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

StatusOr<CallableHandle> Session::MakeCallable(const CallableOptions& options) {
  MutexLock lock(callables_mu_);
  const CallableHandle handle = next_callable_++;
  callables_.emplace(handle, options);
  return handle;
}

StatusOr<CallableOptions> Session::FindCallable(CallableHandle handle) const {
  MutexLock lock(callables_mu_);
  auto it = callables_.find(handle);
  if (it == callables_.end()) {
    return InvalidArgument("callable ", handle, " does not exist (never made, or released)");
  }
  return it->second;
}

Status Session::CheckCallableFeeds(CallableHandle handle, const CallableOptions& options,
                                   const std::vector<Tensor>& feeds) {
  if (feeds.size() != options.feeds.size()) {
    return InvalidArgument("callable ", handle, " takes ", options.feeds.size(), " feeds (",
                           StrJoin(options.feeds, ", "), "), but was given ", feeds.size());
  }
  return Status::OK();
}

Status Session::RunCallable(CallableHandle handle, const std::vector<Tensor>& feeds,
                            std::vector<Tensor>* fetches, proto::RunMetadata* run_metadata) {
  WEFT_ASSIGN_OR_RETURN(CallableOptions options, FindCallable(handle));
  WEFT_RETURN_IF_ERROR(CheckCallableFeeds(handle, options, feeds));
  NamedTensorList inputs;
  for (size_t i = 0; i < feeds.size(); ++i) inputs.emplace_back(options.feeds[i], feeds[i]);
  return Run(options.run_options, inputs, options.fetches, options.targets, fetches, run_metadata);
}

Status Session::ReleaseCallable(CallableHandle handle) {
  MutexLock lock(callables_mu_);
  if (callables_.erase(handle) == 0) {
    return InvalidArgument("callable ", handle, " does not exist (never made, or released)");
  }
  return Status::OK();
}

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
