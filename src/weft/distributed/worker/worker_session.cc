#include "weft/distributed/worker/worker_session.h"

#include <utility>
#include <vector>

#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/worker/worker.h"
#include "weft/runtime/collective/local_collective_executor.h"

namespace weft {

WorkerSession::WorkerSession(std::string handle, std::string task_name,
                             std::unique_ptr<DeviceMgr> devices,
                             std::unique_ptr<WorkerCacheInterface> owned_worker_cache,
                             WorkerCacheInterface* worker_cache,
                             std::unique_ptr<CollectiveExecutorMgrInterface> collectives,
                             const OpRegistry* ops, const KernelRegistry* kernels)
    : handle_(std::move(handle)),
      devices_(std::move(devices)),
      owned_worker_cache_(std::move(owned_worker_cache)),
      worker_cache_(owned_worker_cache_ != nullptr ? owned_worker_cache_.get() : worker_cache),
      collectives_(std::move(collectives)),
      graph_mgr_(std::make_unique<GraphMgr>(std::move(task_name), devices_, ops, kernels)) {}

WorkerSession::~WorkerSession() = default;

std::unique_ptr<CollectiveExecutor> WorkerSession::NewStepCollectives(
    int64_t step_id, StepStatsCollector* stats) const {
  if (collectives_ == nullptr) return std::make_unique<LocalCollectiveExecutor>();
  return collectives_->NewStepExecutor(step_id, stats);
}

int64_t WorkerSession::AddStep(StatusCallback abort) {
  MutexLock lock(mu_);
  if (aborted_) return 0;
  const int64_t token = ++next_step_token_;
  steps_[token] = std::move(abort);
  return token;
}

void WorkerSession::RemoveStep(int64_t step_token) {
  MutexLock lock(mu_);
  steps_.erase(step_token);
}

void WorkerSession::AbortSteps(const Status& status) {
  std::map<int64_t, StatusCallback> steps;
  {
    MutexLock lock(mu_);
    aborted_ = true;
    steps.swap(steps_);
  }
  for (auto& [token, abort] : steps) abort(status);
}

SessionMgr::SessionMgr(const WorkerEnv* env) : env_(env) {}

Status SessionMgr::CreateSession(const std::string& handle, const proto::ConfigProto& config) {
  if (handle.empty()) {
    return InvalidArgument("CreateWorkerSession on worker ", env_->task_name,
                           " needs a session handle");
  }
  {
    MutexLock lock(mu_);
    if (sessions_.count(handle) != 0) {
      return AlreadyExists("session '", handle, "' already exists on worker ", env_->task_name);
    }
  }
  std::unique_ptr<WorkerCacheInterface> owned_cache;
  if (config.has_cluster_def() && config.cluster_def().job_size() > 0) {
    if (!env_->worker_cache_factory) {
      return InvalidArgument("session '", handle, "' names its own cluster, but worker ",
                             env_->task_name, " cannot build worker caches");
    }
    WEFT_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpec::FromProto(config.cluster_def()));
    WEFT_ASSIGN_OR_RETURN(owned_cache, env_->worker_cache_factory(cluster));
    if (owned_cache == nullptr) {
      return Internal("the worker cache factory of worker ", env_->task_name,
                      " gave no cache for session '", handle, "'");
    }
  }
  // The session's own devices: the same names and incarnations; private resource managers unless
  // the session shares the task's state.
  const SessionState state =
      config.share_session_state() ? SessionState::kShared : SessionState::kIsolated;
  std::vector<std::unique_ptr<Device>> devices;
  for (const Device* base : env_->devices->ListDevices())
    devices.push_back(NewSessionDevice(*base, state));
  WorkerCacheInterface* cache = owned_cache != nullptr ? owned_cache.get() : env_->worker_cache;
  std::unique_ptr<CollectiveExecutorMgrInterface> collectives;
  if (env_->collective_mgr_factory && cache != nullptr) {
    StatusOr<std::unique_ptr<CollectiveExecutorMgrInterface>> made =
        env_->collective_mgr_factory(handle, cache);
    if (!made.ok()) {
      return made.status().WithContext(
          StrCat("the collectives of session '", handle, "' on worker ", env_->task_name));
    }
    collectives = std::move(made).value();
  }
  auto session = std::make_shared<WorkerSession>(
      handle, env_->task_name, std::make_unique<DeviceMgr>(std::move(devices)),
      std::move(owned_cache), env_->worker_cache, std::move(collectives), env_->op_registry,
      env_->kernel_registry);
  MutexLock lock(mu_);
  if (!sessions_.emplace(handle, std::move(session)).second) {
    return AlreadyExists("session '", handle, "' already exists on worker ", env_->task_name);
  }
  return Status::OK();
}

StatusOr<std::shared_ptr<WorkerSession>> SessionMgr::FindSession(const std::string& handle) {
  MutexLock lock(mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    return Aborted("session '", handle, "' is not found on worker ", env_->task_name,
                   "; possibly this worker restarted");
  }
  return it->second;
}

void SessionMgr::DeleteSession(const std::string& handle) {
  std::shared_ptr<WorkerSession> session;
  {
    MutexLock lock(mu_);
    auto it = sessions_.find(handle);
    if (it == sessions_.end()) return;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  session->AbortSteps(Aborted("session '", handle, "' was deleted on worker ", env_->task_name));
}

void SessionMgr::AbortAllSteps(const Status& status) {
  std::vector<std::shared_ptr<WorkerSession>> sessions;
  {
    MutexLock lock(mu_);
    for (const auto& [handle, session] : sessions_) sessions.push_back(session);
  }
  for (const auto& session : sessions) session->AbortSteps(status);
}

}  // namespace weft
