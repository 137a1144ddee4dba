#include "weft/distribute/coordinator/cluster_coordinator.h"

#include <algorithm>

#include "weft/core/logging.h"
#include "weft/core/str_util.h"
#include "weft/distribute/coordinator/per_worker_dataset.h"

namespace weft::distribute {

struct RemoteValue::State {
  mutable Mutex mu;
  mutable CondVar ready_cv;
  bool ready WEFT_GUARDED_BY(mu) = false;
  FunctionResult result WEFT_GUARDED_BY(mu) = std::vector<Tensor>{};
  int worker WEFT_GUARDED_BY(mu) = -1;
  int attempts WEFT_GUARDED_BY(mu) = 0;

  void Set(FunctionResult value) {
    MutexLock lock(mu);
    if (ready) return;
    result = std::move(value);
    ready = true;
    ready_cv.NotifyAll();
  }
};

FunctionResult RemoteValue::Fetch() const {
  MutexLock lock(state_->mu);
  while (!state_->ready) state_->ready_cv.Wait(lock);
  return state_->result;
}

bool RemoteValue::IsReady() const {
  MutexLock lock(state_->mu);
  return state_->ready;
}

int RemoteValue::worker() const {
  MutexLock lock(state_->mu);
  return state_->worker;
}

int RemoteValue::attempts() const {
  MutexLock lock(state_->mu);
  return state_->attempts;
}

struct ClusterCoordinator::Closure {
  int64_t id;
  ScheduledFunction fn;
  std::shared_ptr<RemoteValue::State> state;
};

namespace {

// The worker, not the function, is at fault: run the function elsewhere.
bool IsWorkerLost(const Status& status) { return IsUnavailable(status) || IsAborted(status); }

}  // namespace

ClusterCoordinator::ClusterCoordinator(int num_workers, ClusterCoordinatorOptions options)
    : num_workers_(num_workers), options_(std::move(options)) {
  {
    MutexLock lock(mu_);
    retired_.assign(static_cast<size_t>(std::max(num_workers, 0)), false);
    generation_.assign(retired_.size(), 0);
    recovering_.assign(retired_.size(), false);
  }
  const int per_worker = std::max(options_.functions_in_flight_per_worker, 1);
  for (int w = 0; w < num_workers_; ++w) {
    for (int t = 0; t < per_worker; ++t) threads_.emplace_back([this, w] { WorkerLoop(w); });
  }
}

ClusterCoordinator::~ClusterCoordinator() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    CancelQueued(Cancelled("the cluster coordinator is shutting down"));
    work_available_.NotifyAll();
    recovered_.NotifyAll();
  }
  for (std::thread& thread : threads_) thread.join();
}

std::string ClusterCoordinator::WorkerName(int worker) const {
  if (worker >= 0 && worker < static_cast<int>(options_.worker_names.size())) {
    return options_.worker_names[worker];
  }
  return StrCat("worker ", worker);
}

RemoteValue ClusterCoordinator::Schedule(ScheduledFunction fn) {
  auto state = std::make_shared<RemoteValue::State>();
  MutexLock lock(mu_);
  const int64_t id = next_id_++;
  if (!first_error_.ok()) {
    state->Set(Cancelled("function ", id, " was not scheduled: an earlier function failed (",
                         first_error_.message(), "); Join() reports it and clears it"));
    return RemoteValue(state);
  }
  if (std::find(retired_.begin(), retired_.end(), false) == retired_.end()) {
    state->Set(Unavailable("function ", id, " cannot run: the coordinator has no worker left"));
    return RemoteValue(state);
  }
  queue_.push_back(std::make_shared<Closure>(Closure{id, std::move(fn), state}));
  work_available_.NotifyOne();
  return RemoteValue(state);
}

std::shared_ptr<ClusterCoordinator::Closure> ClusterCoordinator::Take(int worker,
                                                                      int64_t* generation) {
  MutexLock lock(mu_);
  while (queue_.empty() && !stopping_ && !retired_[worker]) work_available_.Wait(lock);
  if (stopping_ || retired_[worker]) return nullptr;
  std::shared_ptr<Closure> closure = queue_.front();
  queue_.pop_front();
  ++in_flight_;
  *generation = generation_[worker];
  return closure;
}

void ClusterCoordinator::WorkerLoop(int worker) {
  while (true) {
    int64_t generation = 0;
    std::shared_ptr<Closure> closure = Take(worker, &generation);
    if (closure == nullptr) return;
    {
      MutexLock lock(closure->state->mu);
      closure->state->worker = worker;
      ++closure->state->attempts;
    }
    FunctionResult result = closure->fn(worker);
    if (result.ok() || !IsWorkerLost(result.status())) {
      Finish(closure, std::move(result));
      continue;
    }
    PutBack(worker, closure, result.status());
    if (!RecoverOnce(worker, generation)) return;
  }
}

bool ClusterCoordinator::RecoverOnce(int worker, int64_t generation) {
  {
    MutexLock lock(mu_);
    while (recovering_[worker] && !stopping_) recovered_.Wait(lock);
    if (retired_[worker] || stopping_) return false;
    // Another thread of this worker recovered it after this function started.
    if (generation_[worker] != generation) return true;
    recovering_[worker] = true;
  }
  Status recovered = RecoverWithResources(worker);
  {
    MutexLock lock(mu_);
    recovering_[worker] = false;
    if (recovered.ok()) ++generation_[worker];
    recovered_.NotifyAll();
  }
  if (recovered.ok()) return true;
  Retire(worker, recovered);
  if (options_.on_retired) options_.on_retired(worker, recovered);
  return false;
}

Status ClusterCoordinator::RecoverWithResources(int worker) {
  if (!options_.recover_worker) {
    return Unavailable(WorkerName(worker), " was lost and no recovery is set up");
  }
  constexpr int kAttempts = 3;
  Status status;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    WEFT_RETURN_IF_ERROR(options_.recover_worker(worker));
    std::vector<PerWorkerResourceFn> resources;
    {
      MutexLock lock(mu_);
      resources = per_worker_resources_;
    }
    status = Status::OK();
    for (size_t r = 0; r < resources.size() && status.ok(); ++r) {
      status = resources[r](worker).WithContext(
          StrCat("making per-worker resource ", r, " again on ", WorkerName(worker)));
    }
    if (status.ok()) {
      if (!resources.empty()) {
        WEFT_LOG(WARNING) << WorkerName(worker) << " recovered: made its " << resources.size()
                          << " per-worker resource(s) again (its per-worker datasets start over)";
      }
      MutexLock lock(mu_);
      resources_recreated_ += static_cast<int64_t>(resources.size());
      return status;
    }
    if (!IsWorkerLost(status)) return status;
  }
  return status;
}

Status ClusterCoordinator::CreatePerWorkerResource(PerWorkerResourceFn create) {
  std::vector<int> workers;
  {
    MutexLock lock(mu_);
    // Registered first: a worker recovering from now on makes it itself.
    per_worker_resources_.push_back(create);
    for (int w = 0; w < num_workers_; ++w) {
      if (!retired_[w]) workers.push_back(w);
    }
  }
  for (int w : workers) {
    WEFT_RETURN_IF_ERROR(
        create(w).WithContext(StrCat("making a per-worker resource on ", WorkerName(w))));
  }
  return Status::OK();
}

Status ClusterCoordinator::CreatePerWorkerDataset(const PerWorkerDataset& dataset,
                                                  RunOnWorkerFn run_on_worker) {
  if (!run_on_worker) return InvalidArgument("CreatePerWorkerDataset: no run_on_worker");
  if (dataset.num_workers() != num_workers_) {
    return InvalidArgument("per-worker dataset '", dataset.name(), "' was built for ",
                           dataset.num_workers(), " workers, the coordinator has ", num_workers_);
  }
  std::vector<std::string> targets;
  for (int w = 0; w < num_workers_; ++w) targets.push_back(dataset.MakeIteratorTarget(w));
  return CreatePerWorkerResource([name = dataset.name(), targets = std::move(targets),
                                  run = std::move(run_on_worker)](int worker) -> Status {
    return run(worker, {targets[static_cast<size_t>(worker)]})
        .WithContext(StrCat("per-worker dataset '", name, "'"));
  });
}

int64_t ClusterCoordinator::resources_recreated() const {
  MutexLock lock(mu_);
  return resources_recreated_;
}

void ClusterCoordinator::Retire(int worker, const Status& recovered) {
  MutexLock lock(mu_);
  retired_[worker] = true;
  work_available_.NotifyAll();  // the worker's other threads end
  if (std::find(retired_.begin(), retired_.end(), false) == retired_.end()) {
    std::string names;
    for (int w = 0; w < num_workers_; ++w) names += (w ? ", " : "") + WorkerName(w);
    Status lost = Unavailable("every worker is lost (", names, "); the last, ", WorkerName(worker),
                              ", could not recover: ", recovered.message());
    if (first_error_.ok()) first_error_ = lost;
    CancelQueued(lost);
    all_done_.NotifyAll();
  }
}

void ClusterCoordinator::PutBack(int worker, const std::shared_ptr<Closure>& closure,
                                 const Status& why) {
  // Told before the function is back in the queue: once queued it may finish and Join return, and
  // whoever watches rescheduling must have heard of it by then.
  if (options_.on_rescheduled) options_.on_rescheduled(worker, closure->id, why);
  MutexLock lock(mu_);
  --in_flight_;
  ++rescheduled_;
  queue_.push_front(closure);
  work_available_.NotifyOne();
}

void ClusterCoordinator::Finish(const std::shared_ptr<Closure>& closure, FunctionResult result) {
  const Status status = result.status();
  closure->state->Set(std::move(result));
  MutexLock lock(mu_);
  --in_flight_;
  if (!status.ok() && first_error_.ok()) {
    first_error_ = status;
    CancelQueued(status);
  }
  if (queue_.empty() && in_flight_ == 0) all_done_.NotifyAll();
}

void ClusterCoordinator::CancelQueued(const Status& why) {
  for (const std::shared_ptr<Closure>& closure : queue_) {
    closure->state->Set(Cancelled("function ", closure->id, " was not run: ", why.message()));
  }
  queue_.clear();
}

Status ClusterCoordinator::Join() {
  MutexLock lock(mu_);
  while (!queue_.empty() || in_flight_ > 0) all_done_.Wait(lock);
  Status error = first_error_;
  first_error_ = Status::OK();
  return error;
}

bool ClusterCoordinator::Done() const {
  MutexLock lock(mu_);
  return queue_.empty() && in_flight_ == 0;
}

int64_t ClusterCoordinator::rescheduled() const {
  MutexLock lock(mu_);
  return rescheduled_;
}

std::vector<int> ClusterCoordinator::retired_workers() const {
  MutexLock lock(mu_);
  std::vector<int> retired;
  for (int w = 0; w < num_workers_; ++w) {
    if (retired_[w]) retired.push_back(w);
  }
  return retired;
}

}  // namespace weft::distribute
