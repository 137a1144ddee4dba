// How the turns work: the caller's thread (the coordinator) hands the turn to replica 0 and waits
// until it pauses (in MergeCall) or finishes, then to replica 1, and so on. When every replica is
// paused in MergeCall, the coordinator groups their values, runs replica 0's merge function once,
// hands each replica its slice and gives the turns out again in order. When every replica has
// finished, Run is done. Any other mix (some finished, some waiting) means the replicas made
// different numbers of MergeCalls. To stop early, the coordinator marks the run aborted and gives
// each unfinished replica one more turn, in which its MergeCalls fail at once, so fn returns; the
// threads still build one at a time.
#include "weft/distribute/internal/replica_runner.h"

#include <memory>
#include <thread>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"

namespace weft::distribute::internal {
namespace {

enum class Phase { kWaiting, kRunning, kInMerge, kDone };

struct ReplicaState {
  Phase phase = Phase::kWaiting;
  bool go = false;  // the coordinator gave this replica the turn
  int merge_calls = 0;
  std::vector<Output> merge_values;
  MergeCoordinator::MergeFn merge_fn;
  std::vector<Output> merge_result;
  Status result_status;
  std::vector<Output> result;
};

class Runner final : public MergeCoordinator, public std::enable_shared_from_this<Runner> {
 public:
  Runner(const Strategy& strategy, const Scope& scope, Strategy::ReplicaFn fn,
         std::chrono::milliseconds timeout)
      : strategy_(strategy),
        scope_(scope),
        fn_(std::move(fn)),
        timeout_(timeout),
        creators_(VariableCreatorScope::CurrentCreators()),
        num_replicas_(strategy.num_local_replicas()),
        replicas_(num_replicas_) {}

  StatusOr<std::vector<std::vector<Output>>> Run();
  StatusOr<std::vector<Output>> MergeCall(int replica_id, const std::vector<Output>& values,
                                          MergeFn merge_fn) override;

 private:
  void ReplicaMain(int r);
  // Gives replica r the turn and waits until it pauses or finishes.
  Status Resume(int r);
  // Merges the values of the replicas paused in MergeCall.
  Status Merge();
  // Ends the run with `status`: lets unfinished replicas return, joins every thread.
  Status Finish(Status status);
  // Gives up on threads that did not answer in time.
  Status Abandon(Status status);
  int n() const { return num_replicas_; }

  const Strategy& strategy_;
  const Scope scope_;
  const Strategy::ReplicaFn fn_;
  const std::chrono::milliseconds timeout_;
  // The calling thread's variable creators, re-installed on every replica thread.
  const std::vector<VariableCreator> creators_;
  std::vector<std::unique_ptr<ReplicaContext>> contexts_;
  std::vector<std::thread> threads_;
  const int num_replicas_;

  Mutex mu_;
  CondVar cv_;
  std::vector<ReplicaState> replicas_ WEFT_GUARDED_BY(mu_);
  bool aborted_ WEFT_GUARDED_BY(mu_) = false;
};

StatusOr<std::vector<std::vector<Output>>> Runner::Run() {
  for (int r = 0; r < n(); ++r) {
    contexts_.push_back(std::make_unique<ReplicaContext>(strategy_, r, scope_, this));
  }
  std::shared_ptr<Runner> self = shared_from_this();
  for (int r = 0; r < n(); ++r) threads_.emplace_back([self, r] { self->ReplicaMain(r); });
  for (int r = 0; r < n(); ++r) {
    Status resumed = Resume(r);
    if (!resumed.ok()) return Abandon(resumed);
  }
  // Each round ends with every replica paused or finished; bounded because fn is.
  while (true) {
    int done = 0, merging = 0;
    Status first_error;
    std::vector<std::string> counts;
    {
      MutexLock lock(mu_);
      for (int r = 0; r < n(); ++r) {
        const ReplicaState& replica = replicas_[r];
        if (replica.phase == Phase::kDone) {
          ++done;
          if (!replica.result_status.ok() && first_error.ok()) {
            first_error = replica.result_status.WithContext(StrCat("replica ", r));
          }
        } else {
          ++merging;
        }
        counts.push_back(StrCat("replica ", r, ": ", replica.merge_calls,
                                replica.phase == Phase::kDone ? " (finished)" : " (waiting)"));
      }
    }
    if (!first_error.ok()) return Finish(first_error);
    if (done == n()) break;
    if (merging != n()) {
      return Finish(
          InvalidArgument("replicas made different numbers of ReplicaContext::MergeCall calls: ",
                          StrJoin(counts, ", ")));
    }
    Status merged = Merge();
    if (!merged.ok()) return Finish(merged);
    for (int r = 0; r < n(); ++r) {
      Status resumed = Resume(r);
      if (!resumed.ok()) return Abandon(resumed);
    }
  }
  for (std::thread& thread : threads_) thread.join();
  std::vector<std::vector<Output>> outputs;
  MutexLock lock(mu_);
  for (ReplicaState& replica : replicas_) outputs.push_back(std::move(replica.result));
  return outputs;
}

void Runner::ReplicaMain(int r) {
  {
    MutexLock lock(mu_);
    ReplicaState& replica = replicas_[r];
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (!replica.go && cv_.WaitUntil(lock, deadline)) {
    }
    const bool got_turn = replica.go;
    replica.go = false;
    if (!got_turn || aborted_) {
      replica.result_status = Aborted("replica ", r, " did not start: the run was stopped");
      replica.phase = Phase::kDone;
      cv_.NotifyAll();
      return;
    }
    replica.phase = Phase::kRunning;
  }
  // As in the reference, replica 0 builds under the caller's name scope, so the variables it
  // creates carry the names a single-device model gives them ("dense1/kernel", the names a
  // checkpoint uses); replica r > 0 builds under "replica_<r>".
  Scope replica_scope = (r == 0 ? scope_ : scope_.NewSubScope(StrCat("replica_", r)))
                            .WithDevice(strategy_.devices()[r]);
  StatusOr<std::vector<Output>> result = Internal("replica ", r, " did not run");
  {
    std::vector<std::unique_ptr<VariableCreatorScope>> creator_scopes;
    for (const VariableCreator& creator : creators_) {
      creator_scopes.push_back(std::make_unique<VariableCreatorScope>(creator));
    }
    CurrentReplicaContextGuard current(contexts_[r].get());
    result = fn_(*contexts_[r], replica_scope);
    while (!creator_scopes.empty()) creator_scopes.pop_back();
  }
  MutexLock lock(mu_);
  ReplicaState& replica = replicas_[r];
  if (result.ok()) {
    replica.result = std::move(result).value();
  } else {
    replica.result_status = result.status();
  }
  replica.phase = Phase::kDone;
  cv_.NotifyAll();
}

StatusOr<std::vector<Output>> Runner::MergeCall(int replica_id, const std::vector<Output>& values,
                                                MergeFn merge_fn) {
  MutexLock lock(mu_);
  if (aborted_) return Aborted("MergeCall of replica ", replica_id, ": the run was stopped");
  ReplicaState& replica = replicas_[replica_id];
  replica.merge_values = values;
  replica.merge_fn = std::move(merge_fn);
  ++replica.merge_calls;
  replica.phase = Phase::kInMerge;
  cv_.NotifyAll();
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (!replica.go && cv_.WaitUntil(lock, deadline)) {
  }
  const bool got_turn = replica.go;
  replica.go = false;
  replica.phase = Phase::kRunning;
  if (!got_turn) {
    return DeadlineExceeded("MergeCall of replica ", replica_id, ": the other replicas did not ",
                            "reach MergeCall within ", timeout_.count(), " ms");
  }
  if (aborted_) return Aborted("MergeCall of replica ", replica_id, ": the run was stopped");
  return std::move(replica.merge_result);
}

Status Runner::Resume(int r) {
  MutexLock lock(mu_);
  ReplicaState& replica = replicas_[r];
  replica.go = true;
  cv_.NotifyAll();
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  auto paused = [&replica] {
    return !replica.go && (replica.phase == Phase::kInMerge || replica.phase == Phase::kDone);
  };
  while (!paused() && cv_.WaitUntil(lock, deadline)) {
  }
  if (paused()) return Status::OK();
  return DeadlineExceeded("replica ", r, " neither finished nor reached MergeCall within ",
                          timeout_.count(), " ms");
}

Status Runner::Merge() {
  std::vector<PerReplica> grouped;
  MergeFn merge_fn;
  {
    MutexLock lock(mu_);
    const size_t count = replicas_[0].merge_values.size();
    for (int r = 1; r < n(); ++r) {
      if (replicas_[r].merge_values.size() != count) {
        return InvalidArgument("MergeCall: replica ", r, " passed ",
                               replicas_[r].merge_values.size(), " values but replica 0 passed ",
                               count);
      }
    }
    for (size_t i = 0; i < count; ++i) {
      std::vector<Output> values;
      for (int r = 0; r < n(); ++r) values.push_back(replicas_[r].merge_values[i]);
      grouped.emplace_back(std::move(values), strategy_.devices());
    }
    merge_fn = replicas_[0].merge_fn;
  }
  // Every replica is paused, so this thread alone builds.
  StatusOr<std::vector<DistributedValues>> merged = merge_fn(scope_, grouped);
  if (!merged.ok()) return merged.status().WithContext("MergeCall: the merge function failed");
  MutexLock lock(mu_);
  for (int r = 0; r < n(); ++r) replicas_[r].merge_result.clear();
  for (size_t k = 0; k < merged->size(); ++k) {
    const DistributedValues& value = (*merged)[k];
    if (value.num_replicas() != n()) {
      return InvalidArgument("MergeCall: the merge function's result ", k, " has ",
                             value.num_replicas(), " components for ", n(), " replicas");
    }
    for (int r = 0; r < n(); ++r) replicas_[r].merge_result.push_back(value.value(r));
  }
  return Status::OK();
}

Status Runner::Finish(Status status) {
  {
    MutexLock lock(mu_);
    aborted_ = true;
  }
  for (int r = 0; r < n(); ++r) {
    bool done;
    {
      MutexLock lock(mu_);
      done = replicas_[r].phase == Phase::kDone;
    }
    if (done) continue;
    Status resumed = Resume(r);
    if (!resumed.ok()) return Abandon(status);
  }
  for (std::thread& thread : threads_) thread.join();
  return status;
}

Status Runner::Abandon(Status status) {
  {
    MutexLock lock(mu_);
    aborted_ = true;
  }
  cv_.NotifyAll();
  for (std::thread& thread : threads_) thread.detach();
  return status;
}

}  // namespace

StatusOr<std::vector<std::vector<Output>>> RunReplicas(const Strategy& strategy, const Scope& scope,
                                                       const Strategy::ReplicaFn& fn,
                                                       std::chrono::milliseconds timeout) {
  auto runner = std::make_shared<Runner>(strategy, scope, fn, timeout);
  return runner->Run();
}

}  // namespace weft::distribute::internal
