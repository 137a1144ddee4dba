// Master: the MasterService of one server. It keeps one MasterSession per client session (found
// by a random handle), discovers the cluster's devices, and hands each call to the session it
// names. Every call is asynchronous: `done` runs exactly once, maybe on another thread, and the
// calling thread (a gRPC callback thread) is never blocked for long — set-up work runs on
// env->pool. Thread-safe. Destroying the Master closes every session and waits for the work it
// scheduled.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/core/thread_pool.h"
#include "weft/distributed/call_options.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/worker/worker_cache.h"
#include "weft/framework/kernel_registry.h"
#include "weft/framework/op_registry.h"
#include "weft/master.pb.h"

namespace weft {

class MasterSession;
class Timer;

struct MasterEnv {
  std::string local_task;  // this server's task, "/job:worker/replica:0/task:0"
  WorkerCacheInterface* worker_cache = nullptr;  // the server's cluster; not owned
  // Builds a session's own cache when CreateSession's config carries a cluster_def.
  std::function<StatusOr<std::unique_ptr<WorkerCacheInterface>>(const ClusterSpec&)>
      worker_cache_factory;
  const OpRegistry* op_registry = nullptr;          // not owned
  const KernelRegistry* kernel_registry = nullptr;  // not owned
  ThreadPool* pool = nullptr;                       // for blocking set-up work; not owned
  // How long the master waits for any one worker to answer, unless a session's config says
  // otherwise (worker_timeout_in_ms): see MasterSession::Options::worker_timeout_ms.
  int64_t worker_timeout_ms = 30000;
};

class Master {
 public:
  // `env` and everything it points to must outlive the Master.
  explicit Master(MasterEnv* env);
  ~Master();  // closes every session
  Master(const Master&) = delete;
  Master& operator=(const Master&) = delete;

  void CreateSessionAsync(const proto::CreateSessionRequest* request,
                          proto::CreateSessionResponse* response, StatusCallback done);
  void ExtendSessionAsync(const proto::ExtendSessionRequest* request,
                          proto::ExtendSessionResponse* response, StatusCallback done);
  // `options` (may be null) must outlive `done`; cancelling it cancels the step.
  void RunStepAsync(CallOptions* options, const proto::RunStepRequest* request,
                    proto::RunStepResponse* response, StatusCallback done);
  // Fails (DeadlineExceeded, Unavailable) naming a worker that did not answer; the session is
  // gone either way.
  void CloseSessionAsync(const proto::CloseSessionRequest* request,
                         proto::CloseSessionResponse* response, StatusCallback done);
  void ListDevicesAsync(const proto::ListDevicesRequest* request,
                        proto::ListDevicesResponse* response, StatusCallback done);
  void ResetAsync(const proto::ResetRequest* request, proto::ResetResponse* response,
                  StatusCallback done);

 private:
  // Runs `fn` on env_->pool, counted so the destructor can wait for it.
  void Schedule(std::function<void()> fn);
  StatusOr<std::shared_ptr<MasterSession>> FindSession(const std::string& handle);
  std::string NewSessionHandle();
  void CloseAllSessions();

  MasterEnv* const env_;
  const std::unique_ptr<Timer> timer_;

  Mutex mu_;
  CondVar idle_;
  int scheduled_ WEFT_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<MasterSession>> sessions_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft
