// WorkerSessions: under an asynchronous strategy (ParameterServerStrategy), the session in which
// each worker runs its steps, all holding the model's graph. When a worker is lost (its server
// died, or restarted and forgot its sessions) Recover re-creates that worker's session once the
// server answers again, so the worker rejoins without the others stopping. Recover also notices
// the other tasks a worker's session uses (the ps tasks) that restarted since (their devices'
// incarnations changed: they lost their state) and has them restored, once, before any step
// runs in a re-created session. Thread-safe: each
// worker's thread runs steps in its own session while the model's thread extends the graph.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/device_attributes.pb.h"
#include "weft/graph.pb.h"
#include "weft/runtime/session.h"

namespace weft::train {

class AnyWorkerSession;

// Restores the state of `tasks` (they restarted) by running steps in `session`.
using RestoreTasksFn =
    std::function<Status(Session& session, const std::vector<std::string>& tasks)>;

class WorkerSessions {
 public:
  // One session per entry of `options` (StrategyExtended::WorkerSessionOptions), each created with
  // `graph`; `names` name the workers' tasks ("/job:worker/replica:0/task:1"). `restore_tasks`
  // (may be null: a restarted task is then an error naming it) restores tasks that restarted. An
  // error names the worker.
  static StatusOr<std::unique_ptr<WorkerSessions>> Create(std::vector<SessionOptions> options,
                                                          std::vector<std::string> names,
                                                          const proto::GraphDef& graph,
                                                          RestoreTasksFn restore_tasks = nullptr);
  ~WorkerSessions();
  WorkerSessions(const WorkerSessions&) = delete;
  WorkerSessions& operator=(const WorkerSessions&) = delete;

  int size() const { return static_cast<int>(names_.size()); }
  const std::string& name(int worker) const { return names_[static_cast<size_t>(worker)]; }
  // The session worker `worker` runs its steps in now (kept alive by the caller while it runs).
  std::shared_ptr<Session> session(int worker) const WEFT_EXCLUDES(mu_);
  // Sends `delta` (new nodes) to every worker's session; sessions re-created later get it too.
  Status Extend(const proto::GraphDef& delta) WEFT_EXCLUDES(mu_);
  // Re-creates the session of `worker` after it was lost, trying until its server answers or
  // `timeout` passes (Unavailable naming the worker and the last error). An error that is not the
  // worker's absence (a graph the new session refuses) is returned at once.
  Status Recover(int worker, std::chrono::milliseconds timeout) WEFT_EXCLUDES(mu_);
  // Ends every Recover waiting for a worker (Cancelled) and makes later ones return at once.
  void StopRecoveries() WEFT_EXCLUDES(mu_);
  // Sessions re-created so far.
  int64_t recoveries() const WEFT_EXCLUDES(mu_);
  // A session over the ps tasks alone (the first worker's options with its device filters cut to
  // the ps job), holding the graph as the workers' sessions do, for runs that must not depend on
  // any worker: the commits of exactly-once steps (exactly_once_steps.h), which a worker's
  // recovery closing its session would cancel half done. Made on first use; after
  // ResetPsSession(broken) the next call makes a new one (a ps task restarted).
  StatusOr<std::shared_ptr<Session>> PsSession() WEFT_EXCLUDES(mu_);
  void ResetPsSession(const std::shared_ptr<Session>& broken) WEFT_EXCLUDES(mu_);
  // A Session for the model's own calls (initialisers, metrics, evaluation, checkpoints): each Run
  // goes to a worker whose session answers, moving on to the next when one is absent (so losing a
  // worker, worker 0 included, does not stop them); Create and Extend reach every worker's
  // session. It must not outlive this object.
  std::unique_ptr<Session> NewAnyWorkerSession();

 private:
  friend class AnyWorkerSession;

  WorkerSessions(std::vector<SessionOptions> options, std::vector<std::string> names,
                 RestoreTasksFn restore_tasks)
      : options_(std::move(options)),
        names_(std::move(names)),
        restore_tasks_(std::move(restore_tasks)) {}
  // The devices of `worker`'s session when it and every task the session uses answer within a
  // second.
  StatusOr<std::vector<proto::DeviceAttributes>> Probe(int worker) const;
  // Records the incarnations of `devices`, the state the sessions know.
  void Remember(const std::vector<proto::DeviceAttributes>& devices) WEFT_EXCLUDES(mu_);
  // The tasks other than `worker`'s among `devices` whose incarnation changed since remembered.
  std::vector<std::string> RestartedTasks(int worker,
                                          const std::vector<proto::DeviceAttributes>& devices) const
      WEFT_EXCLUDES(mu_);
  // Restores the tasks among `devices` (seen by `worker`'s new `session`) that restarted, once.
  Status RestoreRestarted(int worker, Session& session,
                          const std::vector<proto::DeviceAttributes>& devices)
      WEFT_EXCLUDES(restore_mu_, mu_);
  // A new session of `worker` holding every graph delta sent so far.
  StatusOr<std::shared_ptr<Session>> NewWorkerSession(int worker) WEFT_EXCLUDES(mu_);
  // The same with `options`; `context` names it in errors. With `install` (a member guarded by
  // mu_), the session is also stored there under the lock that saw every delta sent, unless one
  // is there already (the one there is returned then), so that no delta sent meanwhile misses it.
  StatusOr<std::shared_ptr<Session>> NewSessionWithGraph(
      const SessionOptions& options, const std::string& context,
      std::shared_ptr<Session>* install = nullptr) WEFT_EXCLUDES(mu_);

  const std::vector<SessionOptions> options_;
  const std::vector<std::string> names_;
  const RestoreTasksFn restore_tasks_;
  // Held while tasks are restored, so that one recovering worker restores them and the others
  // wait for it (acquired before mu_).
  Mutex restore_mu_;
  mutable Mutex mu_;
  std::map<std::string, uint64_t> incarnations_ WEFT_GUARDED_BY(mu_);  // by device name
  std::vector<std::shared_ptr<Session>> sessions_ WEFT_GUARDED_BY(mu_);
  std::shared_ptr<Session> ps_session_ WEFT_GUARDED_BY(mu_);  // null until PsSession
  std::vector<proto::GraphDef> deltas_ WEFT_GUARDED_BY(mu_);  // the graph, as it was sent
  int64_t recoveries_ WEFT_GUARDED_BY(mu_) = 0;
  bool stopping_ WEFT_GUARDED_BY(mu_) = false;
  CondVar stop_;
};

}  // namespace weft::train
