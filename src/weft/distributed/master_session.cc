#include "weft/distributed/master_session.h"

#include <algorithm>
#include <random>
#include <set>

#include "weft/core/notification.h"
#include "weft/core/str_util.h"
#include "weft/distributed/master_calls.h"
#include "weft/distributed/master_devices.h"
#include "weft/distributed/master_timer.h"
#include "weft/graph/graph_def_io.h"

namespace weft {
namespace {

// The worker may be gone when the session closes: do not wait for it longer than this.
constexpr int64_t kDeleteWorkerSessionTimeoutMs = 10'000;

std::vector<std::string> SortedUnique(
    const google::protobuf::RepeatedPtrField<std::string>& names) {
  std::set<std::string> unique(names.begin(), names.end());
  return {unique.begin(), unique.end()};
}

std::string SignatureKey(const StepSignature& signature) {
  return StrCat(StrJoin(signature.feeds, ","), "->", StrJoin(signature.fetches, ","), "/",
                StrJoin(signature.targets, ","));
}

// Feeds, fetches and targets sorted, so that orderings of one set share a registration.
StepSignature SignatureOf(const proto::RunStepRequest& request) {
  StepSignature signature;
  std::set<std::string> feeds;
  for (const auto& feed : request.feed()) feeds.insert(feed.name());
  signature.feeds.assign(feeds.begin(), feeds.end());
  signature.fetches = SortedUnique(request.fetch());
  signature.targets = SortedUnique(request.target());
  return signature;
}

}  // namespace

// The graphs of one signature, registered on every task that runs part of it. Built once: the
// first caller builds, concurrent callers wait on `ready` and share `status`.
struct MasterSession::RegisteredGraph {
  StepSignature signature;  // sorted, so that orderings of one set share the registration
  Notification ready;
  Status status;
  ClientGraph client_graph;
  std::vector<std::string> graph_handles;  // per client_graph.tasks
};

// One RunStep in flight. Shared with the RunGraph callbacks, the deadline and the client's cancel
// callback; whichever reports first (all RunGraphs done, deadline, client cancel) answers the
// client, and `response` is never touched after that.
struct MasterSession::Step {
  struct TaskCall {
    CallOptions options;
    proto::RunGraphRequest request;
    proto::RunGraphResponse response;
    Status status;
  };

  std::shared_ptr<RegisteredGraph> graph;
  CallOptions* client_options = nullptr;
  const proto::RunStepRequest* request = nullptr;
  proto::RunStepResponse* response = nullptr;
  StatusCallback done;
  int64_t step_id = 0;
  int64_t timeout_ms = 0;
  std::vector<std::unique_ptr<TaskCall>> calls;  // per graph->client_graph.tasks

  std::mutex mu;
  size_t pending = 0;      // guarded by mu
  bool cancelled = false;  // the RunGraphs were told to stop; guarded by mu
  bool reported = false;   // guarded by mu
  int64_t timer_id = 0;    // guarded by mu
  Status first_root;       // first non-derived error; guarded by mu
  Status first_derived;    // guarded by mu
};

MasterSession::MasterSession(Options options) : options_(std::move(options)) {}

MasterSession::~MasterSession() = default;

StatusOr<std::shared_ptr<MasterSession>> MasterSession::Create(Options options,
                                                               const proto::GraphDef& graph_def) {
  auto graph = std::make_shared<Graph>(*options.op_registry);
  WEFT_RETURN_IF_ERROR(ImportGraphDef(graph_def, graph.get()));
  std::shared_ptr<MasterSession> session(new MasterSession(std::move(options)));
  session->graph_ = std::move(graph);
  WEFT_ASSIGN_OR_RETURN(
      session->devices_,
      DiscoverDevices(session->options_.worker_cache, session->options_.local_task,
                      session->options_.worker_ready_timeout_ms));
  Status created = session->CreateWorkerSessions();
  if (!created.ok()) {
    session->Close();  // deletes the worker sessions that were created
    return created;
  }
  return session;
}

WorkerInterface* MasterSession::Worker(const std::string& task) {
  return options_.worker_cache->GetOrCreateWorker(task);
}

Status MasterSession::CreateWorkerSessions() {
  std::vector<std::string> tasks = options_.worker_cache->ListWorkers();
  proto::CreateWorkerSessionRequest request;
  request.set_session_handle(options_.handle);
  *request.mutable_config() = options_.config;
  std::vector<proto::CreateWorkerSessionResponse> responses(tasks.size());
  std::vector<Status> statuses = CallEveryTask(tasks.size(), [&](size_t i, StatusCallback done) {
    WorkerInterface* worker = Worker(tasks[i]);
    if (worker == nullptr) return done(NotFound("the worker cache knows no task ", tasks[i]));
    worker->CreateWorkerSessionAsync(&request, &responses[i], std::move(done));
  });
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!statuses[i].ok()) {
      return FromWorker(
          statuses[i].WithContext(StrCat("creating worker session '", options_.handle, "'")),
          tasks[i]);
    }
  }
  return Status::OK();
}

Status MasterSession::Extend(const proto::ExtendSessionRequest& request,
                             proto::ExtendSessionResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
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
  const std::string key = SignatureKey(signature);
  std::shared_ptr<RegisteredGraph> entry;
  std::shared_ptr<const Graph> graph;
  {
    std::lock_guard<std::mutex> lock(mu_);
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
      std::lock_guard<std::mutex> lock(mu_);
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
  std::vector<proto::RegisterGraphResponse> responses(tasks.size());
  std::vector<Status> statuses = CallEveryTask(tasks.size(), [&](size_t i, StatusCallback done) {
    tasks[i].registration.set_session_handle(options_.handle);
    WorkerInterface* worker = Worker(tasks[i].task);
    if (worker == nullptr) return done(NotFound("the worker cache knows no task ", tasks[i].task));
    worker->RegisterGraphAsync(&tasks[i].registration, &responses[i], std::move(done));
  });
  Status first_error;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!statuses[i].ok() && first_error.ok()) first_error = FromWorker(statuses[i], tasks[i].task);
  }
  if (first_error.ok()) {
    for (auto& response : responses) registered->graph_handles.push_back(response.graph_handle());
    return Status::OK();
  }
  // Undo the registrations that succeeded; their errors do not matter any more.
  std::vector<proto::DeregisterGraphRequest> deregistrations(tasks.size());
  std::vector<proto::DeregisterGraphResponse> deregistered(tasks.size());
  CallEveryTask(tasks.size(), [&](size_t i, StatusCallback done) {
    WorkerInterface* worker = Worker(tasks[i].task);
    if (!statuses[i].ok() || worker == nullptr) return done(Status::OK());
    deregistrations[i].set_session_handle(options_.handle);
    deregistrations[i].set_graph_handle(responses[i].graph_handle());
    worker->DeregisterGraphAsync(&deregistrations[i], &deregistered[i], std::move(done));
  });
  return first_error;
}

int64_t MasterSession::NewStepId() {
  static std::mutex mu;
  static std::mt19937_64 generator{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  int64_t id = 0;
  while (id == 0) id = static_cast<int64_t>(generator() & ((uint64_t{1} << 56) - 1));
  return id;
}

std::shared_ptr<MasterSession::RegisteredGraph> MasterSession::FindRegistered(
    const StepSignature& signature) {
  const std::string key = SignatureKey(signature);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = graphs_.find(key);
  if (it == graphs_.end() || !it->second->ready.HasBeenNotified() || !it->second->status.ok()) {
    return nullptr;
  }
  return it->second;
}

void MasterSession::RunAsync(CallOptions* options, const proto::RunStepRequest* request,
                             proto::RunStepResponse* response, StatusCallback done,
                             const SetUpRunner& set_up) {
  StepSignature signature = SignatureOf(*request);
  if (std::shared_ptr<RegisteredGraph> graph = FindRegistered(signature)) {
    return RunRegistered(std::move(graph), options, request, response, std::move(done));
  }
  set_up([self = shared_from_this(), signature = std::move(signature), options, request, response,
          done = std::move(done)]() mutable {
    StatusOr<std::shared_ptr<RegisteredGraph>> graph = self->GetOrRegister(signature);
    if (!graph.ok()) return done(graph.status());
    self->RunRegistered(std::move(graph).value(), options, request, response, std::move(done));
  });
}

void MasterSession::RunRegistered(std::shared_ptr<RegisteredGraph> graph, CallOptions* options,
                                  const proto::RunStepRequest* request,
                                  proto::RunStepResponse* response, StatusCallback done) {
  StatusOr<std::shared_ptr<Step>> step =
      PrepareStep(std::move(graph), options, request, response, done);
  if (!step.ok()) return done(step.status());
  StartStep(*step);
}

StatusOr<std::shared_ptr<MasterSession::Step>> MasterSession::PrepareStep(
    std::shared_ptr<RegisteredGraph> graph, CallOptions* options,
    const proto::RunStepRequest* request, proto::RunStepResponse* response, StatusCallback done) {
  std::map<std::string, const proto::NamedTensorProto*> feeds;
  for (const auto& feed : request->feed()) {
    if (!feeds.emplace(feed.name(), &feed).second) {
      return InvalidArgument("feed '", feed.name(), "' is given more than once");
    }
  }
  for (const FeedSpec& spec : graph->client_graph.feeds) {
    WEFT_RETURN_IF_ERROR(CheckFeed(*feeds.at(spec.name), spec));
  }

  auto step = std::make_shared<Step>();
  step->graph = graph;
  step->client_options = options;
  step->request = request;
  step->response = response;
  step->done = std::move(done);
  step->step_id = NewStepId();
  step->timeout_ms = request->options().timeout_in_ms() > 0
                         ? request->options().timeout_in_ms()
                         : options_.config.operation_timeout_in_ms();
  if (options != nullptr && options->timeout_ms() > 0 &&
      (step->timeout_ms <= 0 || options->timeout_ms() < step->timeout_ms)) {
    step->timeout_ms = options->timeout_ms();
  }
  const bool trace = request->options().trace_level() != proto::RunOptions::NO_TRACE;
  const std::vector<TaskGraph>& tasks = graph->client_graph.tasks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto call = std::make_unique<Step::TaskCall>();
    call->request.set_session_handle(options_.handle);
    call->request.set_graph_handle(graph->graph_handles[i]);
    call->request.set_step_id(step->step_id);
    call->request.set_collect_step_stats(trace);
    for (const std::string& name : tasks[i].registration.feed()) {
      *call->request.add_send() = *feeds.at(name);
    }
    step->calls.push_back(std::move(call));
  }
  step->pending = step->calls.size();

  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return FailedPrecondition("session '", options_.handle, "' is closed");
  ++running_steps_;
  unreported_steps_.insert(step);
  return step;
}

void MasterSession::StartStep(const std::shared_ptr<Step>& step) {
  std::shared_ptr<MasterSession> self = shared_from_this();
  if (step->timeout_ms > 0) {
    int64_t timer_id = options_.timer->Schedule(step->timeout_ms, [self, step] {
      self->Abandon(step, DeadlineExceeded("step ", step->step_id, " of session '", self->handle(),
                                           "' did not finish within ", step->timeout_ms, " ms"));
    });
    std::lock_guard<std::mutex> lock(step->mu);
    step->timer_id = timer_id;
  }
  if (step->client_options != nullptr) {
    step->client_options->SetCancelCallback([self, step] {
      self->Abandon(step, Cancelled("step ", step->step_id, " of session '", self->handle(),
                                    "' was cancelled by the client"));
    });
  }
  if (step->calls.empty()) return FinishStep(step);
  const std::vector<TaskGraph>& tasks = step->graph->client_graph.tasks;
  // The master's own worker runs its partition on this thread, so the RPCs go out first.
  std::vector<size_t> order;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].task != options_.local_task) order.push_back(i);
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].task == options_.local_task) order.push_back(i);
  }
  for (size_t i : order) {
    Step::TaskCall* call = step->calls[i].get();
    WorkerInterface* worker = Worker(tasks[i].task);
    auto done = [self, step, i](const Status& status) { self->OnRunGraphDone(step, i, status); };
    if (worker == nullptr) {
      done(NotFound("the worker cache knows no task ", tasks[i].task));
      continue;
    }
    worker->RunGraphAsync(&call->options, &call->request, &call->response, std::move(done));
  }
}

void MasterSession::OnRunGraphDone(const std::shared_ptr<Step>& step, size_t task_index,
                                   const Status& status) {
  bool cancel_others = false;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(step->mu);
    Step::TaskCall& call = *step->calls[task_index];
    call.status = status;
    if (!status.ok()) {
      Status annotated = FromWorker(status, step->graph->client_graph.tasks[task_index].task);
      if (!IsDerivedError(status)) {
        if (step->first_root.ok()) step->first_root = annotated;
        cancel_others = !step->cancelled;
        step->cancelled = true;
      } else if (step->first_derived.ok()) {
        step->first_derived = annotated;
      }
    }
    last = --step->pending == 0;
  }
  if (cancel_others) {
    for (size_t i = 0; i < step->calls.size(); ++i) {
      if (i != task_index) step->calls[i]->options.StartCancel();
    }
  }
  if (last) FinishStep(step);
}

bool MasterSession::ClaimReport(const std::shared_ptr<Step>& step) {
  int64_t timer_id = 0;
  {
    std::lock_guard<std::mutex> lock(step->mu);
    if (step->reported) return false;
    step->reported = true;
    timer_id = step->timer_id;
  }
  // Both are still alive: the step is not reported yet, so the session (and its Master) waits.
  if (timer_id != 0) options_.timer->Cancel(timer_id);
  if (step->client_options != nullptr) step->client_options->ClearCancelCallback();
  return true;
}

void MasterSession::Abandon(const std::shared_ptr<Step>& step, const Status& status) {
  if (!ClaimReport(step)) return;
  {
    std::lock_guard<std::mutex> lock(step->mu);
    step->cancelled = true;
  }
  for (auto& call : step->calls) call->options.StartCancel();
  Report(step, status);
}

void MasterSession::FinishStep(const std::shared_ptr<Step>& step) {
  // Before the report: once the client has its answer, the session and the worker cache it uses
  // may go away.
  SendCleanup(*step);
  if (!ClaimReport(step)) return;
  Status status;
  {
    std::lock_guard<std::mutex> lock(step->mu);
    status = !step->first_root.ok() ? step->first_root : step->first_derived;
  }
  if (status.ok()) status = CollectFetches(step.get());
  Report(step, status);
}

Status MasterSession::CollectFetches(Step* step) {
  const std::vector<TaskGraph>& tasks = step->graph->client_graph.tasks;
  std::map<std::string, proto::TensorProto*> by_name;
  proto::RunStepResponse* response = step->response;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const auto& names = tasks[i].registration.fetch();
    proto::RunGraphResponse& graph_response = step->calls[i]->response;
    if (graph_response.recv_size() != names.size()) {
      return Internal("worker ", tasks[i].task, " returned ", graph_response.recv_size(),
                      " fetches for step ", step->step_id, ", but its graph has ", names.size());
    }
    for (int j = 0; j < names.size(); ++j) {
      by_name[names[j]] = graph_response.mutable_recv(j)->mutable_tensor();
    }
    if (step->request->options().trace_level() != proto::RunOptions::NO_TRACE) {
      auto* stats = response->mutable_metadata()->mutable_step_stats();
      for (auto& device_stats : *graph_response.mutable_step_stats()->mutable_dev_stats()) {
        stats->add_dev_stats()->Swap(&device_stats);
      }
    }
  }
  response->clear_tensor();
  std::map<std::string, int> emitted;  // fetch name -> index in the response
  for (const std::string& name : step->request->fetch()) {
    proto::NamedTensorProto* out = response->add_tensor();
    out->set_name(name);
    auto seen = emitted.find(name);
    if (seen != emitted.end()) {
      *out->mutable_tensor() = response->tensor(seen->second).tensor();
      continue;
    }
    auto found = by_name.find(name);
    if (found == by_name.end()) {
      return Internal("no worker returned fetch '", name, "' for step ", step->step_id);
    }
    // Moves the bytes instead of copying them.
    out->mutable_tensor()->Swap(found->second);
    emitted[name] = response->tensor_size() - 1;
  }
  return Status::OK();
}

void MasterSession::Report(const std::shared_ptr<Step>& step, const Status& status) {
  StatusCallback done = std::move(step->done);
  done(status);
  std::lock_guard<std::mutex> lock(mu_);
  --running_steps_;
  unreported_steps_.erase(step);
  no_running_steps_.notify_all();
}

void MasterSession::SendCleanup(const Step& step) {
  const std::vector<TaskGraph>& tasks = step.graph->client_graph.tasks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskGraph& task = tasks[i];
    // Every RunGraph has answered: the worker dropped a successful step's rendezvous itself.
    if (step.calls[i]->status.ok() && !task.sends_to_other_tasks) continue;
    WorkerInterface* worker = Worker(task.task);
    if (worker == nullptr) continue;
    auto request = std::make_shared<proto::CleanupGraphRequest>();
    auto response = std::make_shared<proto::CleanupGraphResponse>();
    request->set_step_id(step.step_id);
    // Nobody waits for the cleanup; the callback keeps request and response alive.
    worker->CleanupGraphAsync(request.get(), response.get(), [request, response](const Status&) {});
  }
}

void MasterSession::Close() {
  std::map<std::string, std::shared_ptr<RegisteredGraph>> graphs;
  std::set<std::shared_ptr<Step>> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    running = unreported_steps_;
  }
  // Running steps end now, as in the reference: a step with no deadline on a hung worker would
  // otherwise hold Close forever. Their workers are told through the RunGraph cancellation.
  for (const std::shared_ptr<Step>& step : running) {
    Abandon(step, Cancelled("step ", step->step_id, " was cancelled because session '",
                            options_.handle, "' was closed"));
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    no_running_steps_.wait(lock, [this] { return running_steps_ == 0; });
    graphs.swap(graphs_);
  }
  struct Deregistration {
    std::string task;
    proto::DeregisterGraphRequest request;
    proto::DeregisterGraphResponse response;
  };
  std::vector<Deregistration> deregistrations;
  for (auto& [key, graph] : graphs) {
    graph->ready.WaitForNotification();
    if (!graph->status.ok()) continue;
    for (size_t i = 0; i < graph->client_graph.tasks.size(); ++i) {
      Deregistration& deregistration = deregistrations.emplace_back();
      deregistration.task = graph->client_graph.tasks[i].task;
      deregistration.request.set_session_handle(options_.handle);
      deregistration.request.set_graph_handle(graph->graph_handles[i]);
    }
  }
  CallEveryTask(deregistrations.size(), [&](size_t i, StatusCallback done) {
    WorkerInterface* worker = Worker(deregistrations[i].task);
    if (worker == nullptr) return done(Status::OK());
    worker->DeregisterGraphAsync(&deregistrations[i].request, &deregistrations[i].response,
                                 std::move(done));
  });

  struct Deletion {
    CallOptions options;
    proto::DeleteWorkerSessionRequest request;
    proto::DeleteWorkerSessionResponse response;
  };
  std::vector<std::string> tasks = options_.worker_cache->ListWorkers();
  CallEveryTask(
      tasks.size(),
      [&](size_t i, StatusCallback done) {
        WorkerInterface* worker = Worker(tasks[i]);
        if (worker == nullptr) return done(Status::OK());
        // Owned by the callback: a worker that is gone may answer after the wait gave up.
        auto deletion = std::make_shared<Deletion>();
        deletion->options.set_timeout_ms(kDeleteWorkerSessionTimeoutMs);
        deletion->request.set_session_handle(options_.handle);
        worker->DeleteWorkerSessionAsync(
            &deletion->options, &deletion->request, &deletion->response,
            [deletion, done = std::move(done)](const Status& status) { done(status); });
      },
      kDeleteWorkerSessionTimeoutMs + 1000);
}

}  // namespace weft
