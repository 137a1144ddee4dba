// MasterSession: the master's side of one client session. It owns the session's graph (Extend
// imports into a copy, so a bad GraphDef changes nothing), knows the cluster's devices, and, per
// (feeds, fetches, targets) signature, builds and registers one graph per task once; each RunStep
// then runs those graphs on every task under one fresh step id, cancels the others on the first
// root-cause error, at the deadline or when a worker stops answering its liveness probes
// (worker_liveness.h), and sends CleanupGraph afterwards. Every call to a worker that does not
// wait on a step has the worker timeout as its deadline, so no worker can hang set-up or Close.
// Thread-safe. Shared (std::shared_ptr) between the Master and the steps in flight, so a worker
// answering late never touches a destroyed session. master_session_step.cc runs the steps.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/distributed/master/master.h"
#include "weft/distributed/master/master_calls.h"
#include "weft/distributed/master/master_client_graph.h"
#include "weft/distributed/master/worker_liveness.h"
#include "weft/graph/graph.h"

namespace weft {

class MasterSession : public std::enable_shared_from_this<MasterSession> {
 public:
  struct Options {
    std::string handle;
    proto::ConfigProto config;
    std::string local_task;
    const OpRegistry* op_registry = nullptr;            // not owned
    const KernelRegistry* kernel_registry = nullptr;    // not owned
    Timer* timer = nullptr;                             // deadlines; not owned
    WorkerCacheInterface* worker_cache = nullptr;       // not owned (may point into owned_cache)
    std::unique_ptr<WorkerCacheInterface> owned_cache;  // the session's own cluster, if any
    // How long any one worker may take to answer: the wait for workers to come up, the deadline
    // of every set-up and close call, and the liveness probes' limit while steps run.
    int64_t worker_timeout_ms = 30000;
  };

  // Imports `graph_def`, finds the cluster's devices and creates a worker session (same handle,
  // same config) on every task. Blocks: call it from a pool.
  static StatusOr<std::shared_ptr<MasterSession>> Create(Options options,
                                                         const proto::GraphDef& graph_def);
  ~MasterSession();
  MasterSession(const MasterSession&) = delete;
  MasterSession& operator=(const MasterSession&) = delete;

  const std::string& handle() const { return options_.handle; }
  const std::vector<proto::DeviceAttributes>& devices() const { return devices_; }
  const std::string& local_task() const { return options_.local_task; }

  Status Extend(const proto::ExtendSessionRequest& request, proto::ExtendSessionResponse* response);

  // Runs `fn` where blocking is allowed (the master's pool).
  using SetUpRunner = std::function<void(std::function<void()>)>;

  // Runs one step asynchronously. A (feeds, fetches, targets) signature registered before starts
  // on the calling thread without blocking; a new one is first built and registered through
  // `set_up`, since that waits for the workers. `options` may be null.
  void RunAsync(CallOptions* options, const proto::RunStepRequest* request,
                proto::RunStepResponse* response, const SetUpRunner& set_up, StatusCallback done);

  // Cancels running steps (their clients get Cancelled), then deregisters the graphs and deletes
  // the worker sessions, each call bounded by the worker timeout; the first error names its
  // worker (a worker that did not answer the deregistration is not asked to delete its session,
  // and one the liveness probes found silent is not called at all: a client whose step failed on a
  // stopped worker is not held another timeout by Close). Later RunAsync calls fail. Blocks. Calls
  // after the first return OK.
  Status Close();

 private:
  struct RegisteredGraph;
  struct Step;

  explicit MasterSession(Options options);
  // On failure, `unreachable` receives the tasks that did not answer.
  Status CreateWorkerSessions(std::set<std::string>* unreachable);
  // Close() that does not call the tasks in `unreachable`.
  Status CloseSkipping(const std::set<std::string>& unreachable);
  // Close's steps: abandons `running` and waits for every step to end, then takes the registered
  // graphs; cancels the step cleanups still unanswered once the worker sessions are gone.
  std::map<std::string, std::shared_ptr<RegisteredGraph>> EndRunningSteps(
      const std::set<std::shared_ptr<Step>>& running);
  void CancelPendingCleanups();
  template <typename Request, typename Response>
  std::vector<Status> CallTasksWhileClosing(
      const std::vector<std::string>& tasks,
      const std::vector<std::shared_ptr<BoundedCall<Request, Response>>>& calls,
      WorkerMethod<Request, Response> method);
  void StartLiveness();
  // The liveness probe of `task` failed: the steps that use it end with an error naming it.
  void OnWorkerUnresponsive(const std::string& task, const Status& status);
  StatusOr<std::shared_ptr<RegisteredGraph>> GetOrRegister(const StepSignature& signature);
  Status BuildAndRegister(const StepSignature& signature, std::shared_ptr<const Graph> graph,
                          RegisteredGraph* registered);
  // The signature's graphs when they are registered and ready, else null.
  std::shared_ptr<RegisteredGraph> FindRegistered(const StepSignature& signature);
  // Checks the feeds against `graph`, then starts the step (or reports the error to `done`).
  void RunRegisteredAsync(std::shared_ptr<RegisteredGraph> graph, CallOptions* options,
                          const proto::RunStepRequest* request, proto::RunStepResponse* response,
                          StatusCallback done);
  // A step that will answer `done`: kept, not called (a Close may answer it once this returns, so
  // it must hold `done` by then). The caller answers `done` itself when this fails.
  StatusOr<std::shared_ptr<Step>> PrepareStep(std::shared_ptr<RegisteredGraph> graph,
                                              CallOptions* options,
                                              const proto::RunStepRequest* request,
                                              proto::RunStepResponse* response,
                                              StatusCallback done);
  void StartStep(const std::shared_ptr<Step>& step);
  void OnRunGraphDone(const std::shared_ptr<Step>& step, size_t task_index, const Status& status);
  // Answers the client now (deadline, client cancel) and tells the RunGraphs to stop.
  void Abandon(const std::shared_ptr<Step>& step, const Status& status);
  // After every RunGraph has answered: cleanup, then the answer unless one was given already.
  void FinishStep(const std::shared_ptr<Step>& step);
  // Whether the caller is the one to answer the client (exactly one is).
  bool ClaimReport(const std::shared_ptr<Step>& step);
  Status CollectFetches(Step* step);
  // A traced step: one RPC event per RunGraph call (time, bytes, the task) in the metadata.
  void RecordRunGraphCalls(Step* step);
  void Report(const std::shared_ptr<Step>& step, const Status& status);
  void SendCleanup(const Step& step);
  WorkerInterface* Worker(const std::string& task);
  int64_t NewStepId();

  Options options_;
  // The tasks this session uses (the config's device_filters), and their devices; set by Create.
  std::vector<std::string> tasks_;
  std::vector<proto::DeviceAttributes> devices_;
  std::shared_ptr<WorkerLiveness> liveness_;  // set by Create, before any step

  Mutex mu_;
  CondVar no_running_steps_;
  std::shared_ptr<const Graph> graph_ WEFT_GUARDED_BY(mu_);
  int64_t graph_version_ WEFT_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<RegisteredGraph>> graphs_ WEFT_GUARDED_BY(mu_);
  int running_steps_ WEFT_GUARDED_BY(mu_) = 0;
  // Tasks whose liveness probe failed, with the error that named them: Close skips them.
  std::map<std::string, Status> silent_tasks_ WEFT_GUARDED_BY(mu_);
  // Close's calls in flight, by task: a probe that finds the task silent cancels them.
  std::multimap<std::string, std::shared_ptr<CallOptions>> closing_calls_ WEFT_GUARDED_BY(mu_);
  // CleanupGraph calls not yet answered, by id: Close cancels them, so that none waits on a
  // silent worker after the session is gone.
  std::map<uint64_t, std::weak_ptr<CallOptions>> pending_cleanups_ WEFT_GUARDED_BY(mu_);
  uint64_t next_cleanup_id_ WEFT_GUARDED_BY(mu_) = 0;
  std::set<std::shared_ptr<Step>> unreported_steps_ WEFT_GUARDED_BY(mu_);
  bool closed_ WEFT_GUARDED_BY(mu_) = false;
};

}  // namespace weft
