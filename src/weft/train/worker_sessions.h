// WorkerSessions: under an asynchronous strategy (ParameterServerStrategy), the session in which
// each worker runs its steps, all holding the model's graph. When a worker is lost (its server
// died, or restarted and forgot its sessions) Recover re-creates that worker's session once the
// server answers again, so the worker rejoins without the others stopping. Thread-safe: each
// worker's thread runs steps in its own session while the model's thread extends the graph.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/graph.pb.h"
#include "weft/runtime/session.h"

namespace weft::train {

class AnyWorkerSession;

class WorkerSessions {
 public:
  // One session per entry of `options` (StrategyExtended::WorkerSessionOptions), each created with
  // `graph`; `names` name the workers in messages. An error names the worker.
  static StatusOr<std::unique_ptr<WorkerSessions>> Create(std::vector<SessionOptions> options,
                                                          std::vector<std::string> names,
                                                          const proto::GraphDef& graph);
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
  // A Session for the model's own calls (initialisers, metrics, evaluation, checkpoints): each Run
  // goes to a worker whose session answers, moving on to the next when one is absent (so losing a
  // worker, worker 0 included, does not stop them); Create and Extend reach every worker's
  // session. It must not outlive this object.
  std::unique_ptr<Session> NewAnyWorkerSession();

 private:
  friend class AnyWorkerSession;

  WorkerSessions(std::vector<SessionOptions> options, std::vector<std::string> names)
      : options_(std::move(options)), names_(std::move(names)) {}
  // OK when `worker` and the tasks its session uses answer within a second.
  Status Probe(int worker) const;
  // A new session of `worker` holding every graph delta sent so far.
  StatusOr<std::shared_ptr<Session>> NewWorkerSession(int worker) WEFT_EXCLUDES(mu_);

  const std::vector<SessionOptions> options_;
  const std::vector<std::string> names_;
  mutable Mutex mu_;
  std::vector<std::shared_ptr<Session>> sessions_ WEFT_GUARDED_BY(mu_);
  std::vector<proto::GraphDef> deltas_ WEFT_GUARDED_BY(mu_);  // the graph, as it was sent
  int64_t recoveries_ WEFT_GUARDED_BY(mu_) = 0;
  bool stopping_ WEFT_GUARDED_BY(mu_) = false;
  CondVar stop_;
};

}  // namespace weft::train
