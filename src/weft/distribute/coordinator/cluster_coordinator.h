// ClusterCoordinator: the reference's tf.distribute.experimental.coordinator.ClusterCoordinator,
// the chief's scheduler of parameter-server training. Schedule(fn) queues a function and returns at
// once with a RemoteValue; one thread per worker takes functions from the queue and runs each on
// its worker. Semantics, as the reference states them:
//   - A scheduled function runs at least once. When its worker is lost (the function fails with
//     Unavailable or Aborted: the worker, not the function, is at fault) it is put back at the head
//     of the queue and runs on another worker; that worker waits for recovery (WorkerRecovery: the
//     server back, its per-worker resources rebuilt) before it takes functions again.
//   - Any other error is the function's: its RemoteValue holds the error, the functions not yet
//     started are cancelled (their RemoteValues hold Cancelled), and the next Join() returns it.
//   - Join() waits until every scheduled function has finished; Done() says whether they have.
// Per-worker resources (CreatePerWorkerResource; a per-worker dataset's iterators): made on every
// worker at once, and made again on a worker after each recovery, before it takes a function.
// Each worker runs `functions_in_flight_per_worker` functions at once (threads of its own), so that
// the next function's dispatch overlaps the current one's round trip; its recoveries are still one
// at a time, and a thread whose function was lost after the worker recovered does not recover it
// again.
// Thread-safe; the destructor cancels what has not started and waits for what is running.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/core/tensor.h"

namespace weft::distribute {

class PerWorkerDataset;

// What a scheduled function returns.
using FunctionResult = StatusOr<std::vector<Tensor>>;
// A function to run on one worker, given its index.
using ScheduledFunction = std::function<FunctionResult(int worker)>;
// Makes a per-worker resource on `worker`.
using PerWorkerResourceFn = std::function<Status(int worker)>;
// Runs graph `targets` on `worker` (in its session).
using RunOnWorkerFn = std::function<Status(int worker, const std::vector<std::string>& targets)>;

// The result of a scheduled function, filled in when it has run. Thread-safe.
class RemoteValue {
 public:
  // Blocks until the function has run (or was cancelled); its outputs or its error.
  FunctionResult Fetch() const;
  bool IsReady() const;
  // The worker the function last ran on (-1 before it ran), and how many times it was started.
  int worker() const;
  int attempts() const;

 private:
  friend class ClusterCoordinator;
  struct State;
  explicit RemoteValue(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

struct ClusterCoordinatorOptions {
  // Called on a worker's thread after that worker was lost, before it takes another function:
  // returns OK once the worker is usable again (its server answers, its per-worker datasets are
  // rebuilt); an error retires the worker for good (its functions go to the others). The default
  // retires it at once.
  std::function<Status(int worker)> recover_worker;
  // Names of the workers for logs and errors ("/job:worker/task:1"); default "worker <i>".
  std::vector<std::string> worker_names;
  // Called (from a worker thread) each time a function is put back because its worker was lost,
  // before it is queued again (so before Join can return).
  std::function<void(int worker, int64_t function_id, const Status& why)> on_rescheduled;
  // Called (from the worker's thread, after retired_workers() includes it) when a lost worker
  // could not recover and is retired; `why` is the recovery's error.
  std::function<void(int worker, const Status& why)> on_retired;
  // Functions each worker runs at once (each on a thread of its own); at least 1.
  int functions_in_flight_per_worker = 1;
};

class ClusterCoordinator {
 public:
  ClusterCoordinator(int num_workers, ClusterCoordinatorOptions options = {});
  ~ClusterCoordinator();
  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;

  int num_workers() const { return num_workers_; }

  // Queues `fn`; never blocks. After a function failed (until the next Join), returns a
  // RemoteValue holding Cancelled.
  RemoteValue Schedule(ScheduledFunction fn) WEFT_EXCLUDES(mu_);
  // Waits for every function scheduled so far; the first function error since the last Join (the
  // error is then cleared), or Unavailable naming the workers when every worker is retired.
  Status Join() WEFT_EXCLUDES(mu_);
  // Whether every function scheduled so far has finished.
  bool Done() const WEFT_EXCLUDES(mu_);

  // Runs `create` for every worker that is not retired, now (the first error is returned, naming
  // the worker), and again for a worker each time it recovers, after recover_worker and before it
  // takes another function: the resources a restarted worker lost. When that re-creation finds
  // the worker lost again, the worker is recovered again (up to 3 times in all); any other error
  // retires it.
  Status CreatePerWorkerResource(PerWorkerResourceFn create) WEFT_EXCLUDES(mu_);
  // The reference's create_per_worker_dataset: makes `dataset`'s iterator on every worker by
  // running its MakeIterator on each (`run_on_worker`), as a per-worker resource, so a worker
  // that returns after it was lost iterates its dataset again from the start.
  Status CreatePerWorkerDataset(const PerWorkerDataset& dataset, RunOnWorkerFn run_on_worker)
      WEFT_EXCLUDES(mu_);
  // Per-worker resources made again after recoveries, so far.
  int64_t resources_recreated() const WEFT_EXCLUDES(mu_);

  // Functions put back because their worker was lost, so far.
  int64_t rescheduled() const WEFT_EXCLUDES(mu_);
  // Workers currently retired (recovery failed).
  std::vector<int> retired_workers() const WEFT_EXCLUDES(mu_);

 private:
  struct Closure;

  void WorkerLoop(int worker) WEFT_EXCLUDES(mu_);
  // Takes the next closure for `worker`, and the worker's recovery generation then; null when the
  // coordinator is shutting down or the worker is retired.
  std::shared_ptr<Closure> Take(int worker, int64_t* generation) WEFT_EXCLUDES(mu_);
  // After a function of `worker` started in recovery `generation` was lost: recovers the worker
  // unless another of its threads did since; false when the worker is retired.
  bool RecoverOnce(int worker, int64_t generation) WEFT_EXCLUDES(mu_);
  // Runs recover_worker and then makes the worker's per-worker resources again.
  Status RecoverWithResources(int worker) WEFT_EXCLUDES(mu_);
  void Finish(const std::shared_ptr<Closure>& closure, FunctionResult result) WEFT_EXCLUDES(mu_);
  // Puts `closure` back at the head of the queue after its worker was lost.
  void PutBack(int worker, const std::shared_ptr<Closure>& closure, const Status& why)
      WEFT_EXCLUDES(mu_);
  // Marks `worker` retired; when it was the last, fails Join and cancels the queue.
  void Retire(int worker, const Status& recovered) WEFT_EXCLUDES(mu_);
  // Cancels every queued closure after a function error.
  void CancelQueued(const Status& why) WEFT_REQUIRES(mu_);
  std::string WorkerName(int worker) const;

  const int num_workers_;
  const ClusterCoordinatorOptions options_;
  mutable Mutex mu_;
  CondVar work_available_;
  CondVar all_done_;
  std::deque<std::shared_ptr<Closure>> queue_ WEFT_GUARDED_BY(mu_);
  int64_t in_flight_ WEFT_GUARDED_BY(mu_) = 0;
  int64_t next_id_ WEFT_GUARDED_BY(mu_) = 0;
  int64_t rescheduled_ WEFT_GUARDED_BY(mu_) = 0;
  std::vector<PerWorkerResourceFn> per_worker_resources_ WEFT_GUARDED_BY(mu_);
  int64_t resources_recreated_ WEFT_GUARDED_BY(mu_) = 0;
  Status first_error_ WEFT_GUARDED_BY(mu_);
  std::vector<bool> retired_ WEFT_GUARDED_BY(mu_);
  // Per worker: its successful recoveries so far, and whether one of its threads is recovering it.
  std::vector<int64_t> generation_ WEFT_GUARDED_BY(mu_);
  std::vector<bool> recovering_ WEFT_GUARDED_BY(mu_);
  CondVar recovered_;
  bool stopping_ WEFT_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace weft::distribute
