// WorkerSession: what one master session owns on a worker task: its own view of the task's devices
// (so its variables do not collide with another session's, unless its config shares the task's
// state), its worker cache (the peers it pulls tensors from), its collectives across tasks (when
// its cluster has other tasks) and its GraphMgr; it also tracks its
// running steps so deleting the session aborts them. SessionMgr maps session handles to
// WorkerSessions. Both are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "weft/config.pb.h"
#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/distributed/worker/graph_mgr.h"
#include "weft/distributed/worker/worker_cache.h"
#include "weft/runtime/collective/collective_executor_mgr.h"
#include "weft/runtime/device_mgr.h"

namespace weft {

struct WorkerEnv;

class WorkerSession {
 public:
  // `owned_worker_cache` is the session's own cache (ClusterSpec propagation), or null when it
  // uses `worker_cache` (not owned, may be null for a cluster of one task). `collectives` (may be
  // null: collectives among this task's devices only) uses the session's cache.
  WorkerSession(std::string handle, std::string task_name, std::unique_ptr<DeviceMgr> devices,
                std::unique_ptr<WorkerCacheInterface> owned_worker_cache,
                WorkerCacheInterface* worker_cache,
                std::unique_ptr<CollectiveExecutorMgrInterface> collectives, const OpRegistry* ops,
                const KernelRegistry* kernels);
  ~WorkerSession();
  WorkerSession(const WorkerSession&) = delete;
  WorkerSession& operator=(const WorkerSession&) = delete;

  const std::string& handle() const { return handle_; }
  const DeviceMgr& devices() const { return *devices_; }
  WorkerCacheInterface* worker_cache() const { return worker_cache_; }
  GraphMgr* graph_mgr() { return graph_mgr_.get(); }
  // The CollectiveExecutor of step `step_id`: through the session's collectives across tasks when
  // its cluster has other tasks, else among this task's devices (a LocalCollectiveExecutor). With
  // `stats` (a traced step; it outlives the executor) operations across tasks are recorded.
  std::unique_ptr<CollectiveExecutor> NewStepCollectives(int64_t step_id,
                                                         StepStatsCollector* stats) const;

  // Registers a running step; `abort` runs (once) if the session is aborted before RemoveStep.
  // Returns 0, without registering, when the session has already been aborted.
  int64_t AddStep(StatusCallback abort);
  void RemoveStep(int64_t step_token);
  // Aborts every running step with `status` and refuses new ones.
  void AbortSteps(const Status& status);

 private:
  const std::string handle_;
  const std::shared_ptr<const DeviceMgr> devices_;
  const std::unique_ptr<WorkerCacheInterface> owned_worker_cache_;
  WorkerCacheInterface* const worker_cache_;
  // Declared after the cache it uses, so it goes first.
  const std::unique_ptr<CollectiveExecutorMgrInterface> collectives_;
  const std::unique_ptr<GraphMgr> graph_mgr_;
  Mutex mu_;
  bool aborted_ WEFT_GUARDED_BY(mu_) = false;
  int64_t next_step_token_ WEFT_GUARDED_BY(mu_) = 0;
  std::map<int64_t, StatusCallback> steps_ WEFT_GUARDED_BY(mu_);
};

class SessionMgr {
 public:
  explicit SessionMgr(const WorkerEnv* env);  // not owned; outlives the SessionMgr
  SessionMgr(const SessionMgr&) = delete;
  SessionMgr& operator=(const SessionMgr&) = delete;

  // InvalidArgument for an empty handle, AlreadyExists for a known one; errors of the session's
  // worker cache factory are returned.
  Status CreateSession(const std::string& handle, const proto::ConfigProto& config);
  // Aborted naming the handle and the task when the session is unknown.
  StatusOr<std::shared_ptr<WorkerSession>> FindSession(const std::string& handle);
  // Forgets the session (an unknown handle is fine) and aborts its running steps.
  void DeleteSession(const std::string& handle);
  // Aborts the running steps of every session, keeping the sessions.
  void AbortAllSteps(const Status& status);

 private:
  const WorkerEnv* const env_;
  Mutex mu_;
  std::map<std::string, std::shared_ptr<WorkerSession>> sessions_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft
