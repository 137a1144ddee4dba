// MasterSession's steps: start the RunGraphs of a registered signature, gather their answers,
// and end a step early at its deadline, on the client's cancel or when a worker it uses stops
// answering the liveness probes. See master_session.h.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
#include "weft/core/timer.h"
#include "weft/distributed/master/internal/master_session_state.h"
#include "weft/distributed/master/master_calls.h"
#include "weft/distributed/master/master_session.h"
#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {
namespace {

std::vector<std::string> SortedUnique(
    const google::protobuf::RepeatedPtrField<std::string>& names) {
  std::set<std::string> unique(names.begin(), names.end());
  return {unique.begin(), unique.end()};
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

int64_t MasterSession::NewStepId() {
  static Mutex mu;
  static std::mt19937_64 generator{std::random_device{}()};
  MutexLock lock(mu);
  int64_t id = 0;
  while (id == 0) id = static_cast<int64_t>(generator() & ((uint64_t{1} << 56) - 1));
  return id;
}

void MasterSession::RunAsync(CallOptions* options, const proto::RunStepRequest* request,
                             proto::RunStepResponse* response, const SetUpRunner& set_up,
                             StatusCallback done) {
  StepSignature signature = SignatureOf(*request);
  if (std::shared_ptr<RegisteredGraph> graph = FindRegistered(signature)) {
    return RunRegisteredAsync(std::move(graph), options, request, response, std::move(done));
  }
  set_up([self = shared_from_this(), signature = std::move(signature), options, request, response,
          done = std::move(done)]() mutable {
    StatusOr<std::shared_ptr<RegisteredGraph>> graph = self->GetOrRegister(signature);
    if (!graph.ok()) return done(graph.status());
    self->RunRegisteredAsync(std::move(graph).value(), options, request, response, std::move(done));
  });
}

void MasterSession::RunRegisteredAsync(std::shared_ptr<RegisteredGraph> graph, CallOptions* options,
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
  {
    MutexLock lock(step->mu);  // not shared yet; the lock only tells the analysis so
    step->pending = step->calls.size();
  }

  MutexLock lock(mu_);
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
    MutexLock lock(step->mu);
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
  const bool trace = step->request->options().trace_level() != proto::RunOptions::NO_TRACE;
  for (size_t i : order) {
    Step::TaskCall* call = step->calls[i].get();
    if (trace) call->start_nanos = StepStatsNowNanos();
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
    MutexLock lock(step->mu);
    Step::TaskCall& call = *step->calls[task_index];
    call.status = status;
    if (call.start_nanos != 0) call.end_nanos = StepStatsNowNanos();
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
    MutexLock lock(step->mu);
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
    MutexLock lock(step->mu);
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
    MutexLock lock(step->mu);
    status = !step->first_root.ok() ? step->first_root : step->first_derived;
  }
  if (status.ok()) status = CollectFetches(step.get());
  Report(step, status);
}

void MasterSession::RecordRunGraphCalls(Step* step) {
  const std::vector<TaskGraph>& tasks = step->graph->client_graph.tasks;
  proto::DeviceStepStats* master =
      step->response->mutable_metadata()->mutable_step_stats()->add_dev_stats();
  master->set_device(StrCat(options_.local_task, "/master"));
  master->set_task(options_.local_task);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Step::TaskCall& call = *step->calls[i];
    proto::NodeExecStats* event = master->add_node_stats();
    SetStatsTimes(call.start_nanos, call.end_nanos, event);
    event->set_node_name(tasks[i].task);
    event->set_op("RunGraph");
    event->set_kind(proto::NodeExecStats::RPC);
    event->add_peers(tasks[i].task);
    // What went over the wire (the response before its step stats move into the metadata).
    event->set_transfer_bytes(
        static_cast<int64_t>(call.request.ByteSizeLong() + call.response.ByteSizeLong()));
    event->set_timeline_label(StrCat("RunGraph on ", tasks[i].task,
                                     tasks[i].task == options_.local_task ? " (in-process)" : ""));
  }
}

Status MasterSession::CollectFetches(Step* step) {
  const std::vector<TaskGraph>& tasks = step->graph->client_graph.tasks;
  std::map<std::string, proto::TensorProto*> by_name;
  proto::RunStepResponse* response = step->response;
  if (step->request->options().trace_level() != proto::RunOptions::NO_TRACE) {
    RecordRunGraphCalls(step);
  }
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
  MutexLock lock(mu_);
  --running_steps_;
  unreported_steps_.erase(step);
  no_running_steps_.NotifyAll();
}

void MasterSession::SendCleanup(const Step& step) {
  const std::vector<TaskGraph>& tasks = step.graph->client_graph.tasks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskGraph& task = tasks[i];
    // Every RunGraph has answered: the worker dropped a successful step's rendezvous itself.
    if (step.calls[i]->status.ok() && !task.sends_to_other_tasks) continue;
    WorkerInterface* worker = Worker(task.task);
    if (worker == nullptr) continue;
    struct Cleanup {
      CallOptions options;
      proto::CleanupGraphRequest request;
      proto::CleanupGraphResponse response;
    };
    auto cleanup = std::make_shared<Cleanup>();
    cleanup->options.set_timeout_ms(options_.worker_timeout_ms);
    cleanup->request.set_step_id(step.step_id);
    uint64_t id = 0;
    {
      // Close cancels the cleanups still unanswered (a silent worker's).
      MutexLock lock(mu_);
      id = next_cleanup_id_++;
      pending_cleanups_.emplace(id, std::shared_ptr<CallOptions>(cleanup, &cleanup->options));
    }
    // Nobody waits for the cleanup; the callback keeps the call's state alive.
    worker->CleanupGraphAsync(&cleanup->options, &cleanup->request, &cleanup->response,
                              [cleanup, id, weak = weak_from_this()](const Status&) {
                                if (std::shared_ptr<MasterSession> self = weak.lock()) {
                                  MutexLock lock(self->mu_);
                                  self->pending_cleanups_.erase(id);
                                }
                              });
  }
}

void MasterSession::OnWorkerUnresponsive(const std::string& task, const Status& status) {
  std::vector<std::shared_ptr<Step>> affected;
  const std::string worker =
      StrCat("worker ", task, " at ", options_.worker_cache->TaskAddress(task),
             " stopped answering (worker timeout ", options_.worker_timeout_ms, " ms)");
  std::vector<std::shared_ptr<CallOptions>> closing_calls;
  {
    MutexLock lock(mu_);
    silent_tasks_.try_emplace(task, Status(status.code(), StrCat(worker, ": ", status.message())));
    auto [first, last] = closing_calls_.equal_range(task);
    for (auto it = first; it != last; ++it) closing_calls.push_back(it->second);
    for (const std::shared_ptr<Step>& step : unreported_steps_) {
      for (const TaskGraph& graph : step->graph->client_graph.tasks) {
        if (graph.task == task) affected.push_back(step);
      }
    }
  }
  for (const std::shared_ptr<CallOptions>& call : closing_calls) call->StartCancel();
  for (const std::shared_ptr<Step>& step : affected) {
    Abandon(step, Status(status.code(), StrCat(worker, ", so step ", step->step_id, " of session '",
                                               handle(), "' was abandoned: ", status.message())));
  }
}

}  // namespace weft
