#include "weft/distributed/master/master_session.h"

#include <algorithm>
#include <set>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
#include "weft/core/timer.h"
#include "weft/distributed/master/internal/master_session_state.h"
#include "weft/distributed/master/master_calls.h"
#include "weft/distributed/master/master_devices.h"
#include "weft/graph/graph_def_io.h"
#include "weft/graph/prune.h"

namespace weft {

MasterSession::MasterSession(Options options) : options_(std::move(options)) {}

MasterSession::~MasterSession() {
  if (liveness_ != nullptr) liveness_->Stop();
}

StatusOr<std::shared_ptr<MasterSession>> MasterSession::Create(Options options,
                                                               const proto::GraphDef& graph_def) {
  auto graph = std::make_shared<Graph>(*options.op_registry);
  WEFT_RETURN_IF_ERROR(ImportGraphDef(graph_def, graph.get()));
  std::shared_ptr<MasterSession> session(new MasterSession(std::move(options)));
  {
    MutexLock lock(session->mu_);  // not shared yet; the lock only tells the analysis so
    session->graph_ = std::move(graph);
  }
  const proto::ConfigProto& config = session->options_.config;
  WEFT_ASSIGN_OR_RETURN(
      session->tasks_,
      SessionTasks(session->options_.worker_cache->ListWorkers(), session->options_.local_task,
                   {config.device_filters().begin(), config.device_filters().end()}));
  WEFT_ASSIGN_OR_RETURN(session->devices_,
                        DiscoverDevices(session->options_.worker_cache, session->tasks_,
                                        session->options_.worker_timeout_ms));
  std::set<std::string> unreachable;
  Status created = session->CreateWorkerSessions(&unreachable);
  if (!created.ok()) {
    // Deletes the worker sessions that were created.
    session->CloseSkipping(unreachable).IgnoreError();
    return created;
  }
  session->StartLiveness();
  return session;
}

WorkerInterface* MasterSession::Worker(const std::string& task) {
  return options_.worker_cache->GetOrCreateWorker(task);
}

Status MasterSession::CreateWorkerSessions(std::set<std::string>* unreachable) {
  using Creation =
      BoundedCall<proto::CreateWorkerSessionRequest, proto::CreateWorkerSessionResponse>;
  const std::vector<std::string>& tasks = tasks_;
  std::vector<std::shared_ptr<Creation>> calls;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto call = std::make_shared<Creation>();
    call->request.set_session_handle(options_.handle);
    *call->request.mutable_config() = options_.config;
    calls.push_back(std::move(call));
  }
  std::vector<Status> statuses =
      CallTasksWithDeadline(options_.worker_cache, tasks, calls,
                            &WorkerInterface::CreateWorkerSessionAsync, options_.worker_timeout_ms);
  Status first_error;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (IsUnreachable(statuses[i])) unreachable->insert(tasks[i]);
    if (!statuses[i].ok() && first_error.ok()) {
      first_error =
          statuses[i].WithContext(StrCat("creating worker session '", options_.handle, "'"));
    }
  }
  return first_error;
}

void MasterSession::StartLiveness() {
  WorkerLiveness::Options liveness;
  for (const std::string& task : tasks_) {
    // The master's own worker is in this process: it cannot stop answering on its own.
    if (task != options_.local_task) liveness.tasks.push_back(task);
  }
  if (liveness.tasks.empty()) return;
  liveness.worker_cache = options_.worker_cache;
  liveness.timer = options_.timer;
  liveness.timeout_ms = options_.worker_timeout_ms;
  std::weak_ptr<MasterSession> weak = weak_from_this();
  liveness.active = [weak] {
    std::shared_ptr<MasterSession> self = weak.lock();
    if (self == nullptr) return false;
    MutexLock lock(self->mu_);
    return !self->unreported_steps_.empty() || !self->closing_calls_.empty();
  };
  liveness.on_failure = [weak](const std::string& task, const Status& status) {
    if (std::shared_ptr<MasterSession> self = weak.lock()) self->OnWorkerUnresponsive(task, status);
  };
  liveness_ = WorkerLiveness::Start(std::move(liveness));
}

Status MasterSession::Extend(const proto::ExtendSessionRequest& request,
                             proto::ExtendSessionResponse* response) {
  MutexLock lock(mu_);
  if (closed_) return FailedPrecondition("session '", options_.handle, "' is closed");
  if (request.current_graph_version() != graph_version_) {
    return Aborted("the session's graph is at version ", graph_version_,
                   ", but the request expects ", request.current_graph_version());
  }
  // Imports into a copy so that a bad GraphDef leaves the session's graph as it was.
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Graph> extended, CopyGraph(*graph_));
  WEFT_RETURN_IF_ERROR(ImportGraphDef(request.graph_def(), extended.get()));
  graph_ = std::move(extended);
  ++graph_version_;
  response->set_new_graph_version(graph_version_);
  return Status::OK();
}

StatusOr<std::shared_ptr<MasterSession::RegisteredGraph>> MasterSession::GetOrRegister(
    const StepSignature& signature) {
  const std::string key = StepSignatureKey(signature);
  std::shared_ptr<RegisteredGraph> entry;
  std::shared_ptr<const Graph> graph;
  {
    MutexLock lock(mu_);
    if (closed_) return FailedPrecondition("session '", options_.handle, "' is closed");
    auto it = graphs_.find(key);
    if (it != graphs_.end()) {
      entry = it->second;
    } else {
      entry = std::make_shared<RegisteredGraph>();
      entry->signature = signature;
      graphs_.emplace(key, entry);
      graph = graph_;
    }
  }
  if (graph != nullptr) {
    entry->status = BuildAndRegister(signature, std::move(graph), entry.get());
    if (!entry->status.ok()) {
      // Later callers try again: an Extend may have added the missing node since.
      MutexLock lock(mu_);
      auto it = graphs_.find(key);
      if (it != graphs_.end() && it->second == entry) graphs_.erase(it);
    }
    entry->ready.Notify();
  } else {
    entry->ready.WaitForNotification();
  }
  WEFT_RETURN_IF_ERROR(entry->status);
  return entry;
}

Status MasterSession::BuildAndRegister(const StepSignature& signature,
                                       std::shared_ptr<const Graph> graph,
                                       RegisteredGraph* registered) {
  ClientGraphOptions graph_options;
  graph_options.allow_soft_placement = options_.config.allow_soft_placement();
  graph_options.log_device_placement = options_.config.log_device_placement();
  WEFT_ASSIGN_OR_RETURN(
      registered->client_graph,
      BuildClientGraph(*graph, signature, devices_, options_.kernel_registry, graph_options));
  std::vector<TaskGraph>& tasks = registered->client_graph.tasks;
  using Registration = BoundedCall<proto::RegisterGraphRequest, proto::RegisterGraphResponse>;
  std::vector<std::string> names;
  std::vector<std::shared_ptr<Registration>> registrations;
  for (TaskGraph& task : tasks) {
    task.registration.set_session_handle(options_.handle);
    names.push_back(task.task);
    auto call = std::make_shared<Registration>();
    call->request = task.registration;  // a copy: a late answer must not touch `registered`
    registrations.push_back(std::move(call));
  }
  const int64_t timeout_ms = options_.worker_timeout_ms;
  std::vector<Status> statuses =
      CallTasksWithDeadline(options_.worker_cache, names, registrations,
                            &WorkerInterface::RegisterGraphAsync, timeout_ms);
  Status first_error;
  for (const Status& status : statuses) {
    if (!status.ok() && first_error.ok()) first_error = status;
  }
  if (first_error.ok()) {
    for (auto& call : registrations) {
      registered->graph_handles.push_back(call->response.graph_handle());
    }
    return Status::OK();
  }
  // Undo the registrations that succeeded; their errors do not matter any more.
  using Deregistration = BoundedCall<proto::DeregisterGraphRequest, proto::DeregisterGraphResponse>;
  std::vector<std::shared_ptr<Deregistration>> deregistrations(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!statuses[i].ok()) continue;
    deregistrations[i] = std::make_shared<Deregistration>();
    deregistrations[i]->request.set_session_handle(options_.handle);
    deregistrations[i]->request.set_graph_handle(registrations[i]->response.graph_handle());
  }
  CallTasksWithDeadline(options_.worker_cache, names, deregistrations,
                        &WorkerInterface::DeregisterGraphAsync, timeout_ms);
  return first_error;
}

std::shared_ptr<MasterSession::RegisteredGraph> MasterSession::FindRegistered(
    const StepSignature& signature) {
  const std::string key = StepSignatureKey(signature);
  MutexLock lock(mu_);
  auto it = graphs_.find(key);
  if (it == graphs_.end() || !it->second->ready.HasBeenNotified() || !it->second->status.ok()) {
    return nullptr;
  }
  return it->second;
}

Status MasterSession::Close() {
  Status closed = CloseSkipping({});
  std::map<std::string, Status> silent;
  {
    MutexLock lock(mu_);
    silent = silent_tasks_;
  }
  if (!closed.ok() || silent.empty()) return closed;
  // Named, not waited for again: finding it silent already took the worker timeout.
  const Status& first = silent.begin()->second;
  return Status(first.code(), StrCat("closing session '", options_.handle, "': ", first.message(),
                                     "; not waited for again"));
}

// Calls `method` of `tasks` like CallTasksWithDeadline, skipping the tasks found silent (null
// calls), and lets the liveness probes cancel a call to a task they find silent meanwhile.
template <typename Request, typename Response>
std::vector<Status> MasterSession::CallTasksWhileClosing(
    const std::vector<std::string>& tasks,
    const std::vector<std::shared_ptr<BoundedCall<Request, Response>>>& calls,
    WorkerMethod<Request, Response> method) {
  {
    MutexLock lock(mu_);
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (calls[i] == nullptr) continue;
      // Shares the call's ownership, so a cancel racing the call's end touches live memory.
      closing_calls_.emplace(tasks[i], std::shared_ptr<CallOptions>(calls[i], &calls[i]->options));
    }
  }
  std::vector<Status> statuses = CallTasksWithDeadline(options_.worker_cache, tasks, calls, method,
                                                       options_.worker_timeout_ms);
  MutexLock lock(mu_);
  closing_calls_.clear();
  return statuses;
}

Status MasterSession::CloseSkipping(const std::set<std::string>& unreachable) {
  std::map<std::string, std::shared_ptr<RegisteredGraph>> graphs;
  std::set<std::shared_ptr<Step>> running;
  {
    MutexLock lock(mu_);
    if (closed_) return Status::OK();
    closed_ = true;
    running = unreported_steps_;
  }
  // The liveness probes go on until the workers answered: a worker that a collective between the
  // workers found silent (the step failed through it, not through a probe) is named by its probe
  // and not waited for twice.
  struct StopLiveness {
    WorkerLiveness* liveness;
    ~StopLiveness() {
      if (liveness != nullptr) liveness->Stop();
    }
  } stop_liveness{liveness_.get()};
  graphs = EndRunningSteps(running);
  // Only a worker that did not answer is reported: one that lost the session (restarted) holds
  // nothing to undo. A worker found silent (before or during Close) is not called again.
  Status first_error;
  std::set<std::string> silent = unreachable;
  auto note = [&](const std::vector<std::string>& tasks, const std::vector<Status>& statuses) {
    MutexLock lock(mu_);
    for (const auto& [task, status] : silent_tasks_) silent.insert(task);
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!IsUnreachable(statuses[i]) || silent_tasks_.count(tasks[i]) != 0) continue;
      silent.insert(tasks[i]);
      if (first_error.ok()) {
        first_error = statuses[i].WithContext(StrCat("closing session '", options_.handle, "'"));
      }
    }
  };
  note({}, {});

  using Deregistration = BoundedCall<proto::DeregisterGraphRequest, proto::DeregisterGraphResponse>;
  std::vector<std::string> deregister_tasks;
  std::vector<std::shared_ptr<Deregistration>> deregistrations;
  for (auto& [key, graph] : graphs) {
    graph->ready.WaitForNotification();
    if (!graph->status.ok()) continue;
    for (size_t i = 0; i < graph->client_graph.tasks.size(); ++i) {
      const std::string& task = graph->client_graph.tasks[i].task;
      if (silent.count(task) != 0) continue;
      auto call = std::make_shared<Deregistration>();
      call->request.set_session_handle(options_.handle);
      call->request.set_graph_handle(graph->graph_handles[i]);
      deregister_tasks.push_back(task);
      deregistrations.push_back(std::move(call));
    }
  }
  note(deregister_tasks, CallTasksWhileClosing(deregister_tasks, deregistrations,
                                               &WorkerInterface::DeregisterGraphAsync));

  using Deletion =
      BoundedCall<proto::DeleteWorkerSessionRequest, proto::DeleteWorkerSessionResponse>;
  const std::vector<std::string>& tasks = tasks_;
  std::vector<std::shared_ptr<Deletion>> deletions(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (silent.count(tasks[i]) != 0) continue;
    deletions[i] = std::make_shared<Deletion>();
    deletions[i]->request.set_session_handle(options_.handle);
  }
  note(tasks, CallTasksWhileClosing(tasks, deletions, &WorkerInterface::DeleteWorkerSessionAsync));
  CancelPendingCleanups();
  return first_error;
}

std::map<std::string, std::shared_ptr<MasterSession::RegisteredGraph>>
MasterSession::EndRunningSteps(const std::set<std::shared_ptr<Step>>& running) {
  // Running steps end now, as in the reference: a step with no deadline on a hung worker would
  // otherwise hold Close forever. Their workers are told through the RunGraph cancellation.
  for (const std::shared_ptr<Step>& step : running) {
    Abandon(step, Cancelled("step ", step->step_id, " was cancelled because session '",
                            options_.handle, "' was closed"));
  }
  std::map<std::string, std::shared_ptr<RegisteredGraph>> graphs;
  MutexLock lock(mu_);
  while (running_steps_ != 0) no_running_steps_.Wait(lock);
  graphs.swap(graphs_);
  return graphs;
}

void MasterSession::CancelPendingCleanups() {
  // The sessions are gone: a step's cleanup still waiting (on a silent worker) has nothing to do.
  std::vector<std::shared_ptr<CallOptions>> cleanups;
  {
    MutexLock lock(mu_);
    for (const auto& [id, call] : pending_cleanups_) {
      if (std::shared_ptr<CallOptions> live = call.lock()) cleanups.push_back(std::move(live));
    }
  }
  for (const std::shared_ptr<CallOptions>& call : cleanups) call->StartCancel();
}

}  // namespace weft
