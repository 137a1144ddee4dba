// Worker: the in-process WorkerService of one task. It keeps the task's WorkerSessions (each with
// its own devices, GraphMgr and worker cache), runs registered partitions for a step and serves
// RecvTensor out of the step's RemoteRendezvous. Thread-safe; no call blocks on a step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/core/thread_pool.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/collective/collective_group_leader.h"
#include "weft/distributed/worker/worker_cache.h"
#include "weft/distributed/worker/worker_interface.h"
#include "weft/framework/kernel_registry.h"
#include "weft/framework/op_registry.h"
#include "weft/runtime/collective/collective_executor_mgr.h"
#include "weft/runtime/device_mgr.h"

namespace weft {

class RendezvousMgr;
class SessionMgr;

struct WorkerEnv {
  std::string task_name;                            // "/job:worker/replica:0/task:0"
  const DeviceMgr* devices = nullptr;               // the server's devices; not owned
  const OpRegistry* op_registry = nullptr;          // not owned
  const KernelRegistry* kernel_registry = nullptr;  // not owned
  ThreadPool* compute_pool = nullptr;               // inter-op threads for steps; not owned
  // The server's own cluster (peers for RecvTensor); not owned; null for a cluster of one task.
  WorkerCacheInterface* worker_cache = nullptr;
  // Builds a session's own cache when CreateWorkerSession's config carries a cluster_def
  // (ClusterSpec propagation); null: such requests are InvalidArgument.
  std::function<StatusOr<std::unique_ptr<WorkerCacheInterface>>(const ClusterSpec&)>
      worker_cache_factory;
  // Makes the collectives of a session whose cluster has other tasks (groups that span tasks:
  // in-graph replication through a master), given the session's handle and worker cache; null
  // (or a null result): the session's collectives stay among this task's devices.
  std::function<StatusOr<std::unique_ptr<CollectiveExecutorMgrInterface>>(
      const std::string& session_handle, WorkerCacheInterface* worker_cache)>
      collective_mgr_factory;
};

// The in-process WorkerService.
class Worker final : public WorkerInterface {
 public:
  // `env` is not owned and outlives the worker; it may be completed (worker_cache set) after
  // construction, before the first call.
  explicit Worker(WorkerEnv* env);
  // Aborts running steps and waits for them.
  ~Worker() override;

  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void GetStatusAsync(CallOptions* options, const proto::GetStatusRequest* request,
                      proto::GetStatusResponse* response, StatusCallback done) override;
  void CreateWorkerSessionAsync(CallOptions* options,
                                const proto::CreateWorkerSessionRequest* request,
                                proto::CreateWorkerSessionResponse* response,
                                StatusCallback done) override;
  void DeleteWorkerSessionAsync(CallOptions* options,
                                const proto::DeleteWorkerSessionRequest* request,
                                proto::DeleteWorkerSessionResponse* response,
                                StatusCallback done) override;
  void RegisterGraphAsync(CallOptions* options, const proto::RegisterGraphRequest* request,
                          proto::RegisterGraphResponse* response, StatusCallback done) override;
  void DeregisterGraphAsync(CallOptions* options, const proto::DeregisterGraphRequest* request,
                            proto::DeregisterGraphResponse* response, StatusCallback done) override;
  void RunGraphAsync(CallOptions* options, const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response, StatusCallback done) override;
  void CleanupGraphAsync(CallOptions* options, const proto::CleanupGraphRequest* request,
                         proto::CleanupGraphResponse* response, StatusCallback done) override;
  // Delivers the Tensor itself (no copy); also what the gRPC service calls.
  void RecvTensorAsync(CallOptions* options, const proto::RecvTensorRequest* request,
                       TensorResponse* response, StatusCallback done) override;
  void CompleteGroupAsync(CallOptions* options, const proto::CompleteGroupRequest* request,
                          proto::CompleteGroupResponse* response, StatusCallback done) override;

 private:
  // Counts the RunGraph calls whose `done` has not returned, so the destructor can wait for them.
  void StepStarted();
  void StepEnded();

  WorkerEnv* const env_;
  const std::unique_ptr<SessionMgr> session_mgr_;
  // The collective groups this task leads (any task may; members ask task 0 of their job).
  CollectiveGroupLeader collective_groups_;
  const std::unique_ptr<RendezvousMgr> rendezvous_mgr_;
  Mutex mu_;
  CondVar steps_ended_;
  int64_t running_steps_ WEFT_GUARDED_BY(mu_) = 0;
};

}  // namespace weft
