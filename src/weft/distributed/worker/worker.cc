#include "weft/distributed/worker/worker.h"

#include <utility>

#include "weft/core/metrics.h"
#include "weft/core/mutex.h"
#include "weft/distributed/worker/rendezvous_mgr.h"
#include "weft/distributed/worker/step_metrics.h"
#include "weft/distributed/worker/worker_session.h"
#include "weft/framework/cancellation.h"
#include "weft/framework/copy_tensor.h"
#include "weft/framework/rendezvous.h"
#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {

Worker::Worker(WorkerEnv* env)
    : env_(env),
      session_mgr_(std::make_unique<SessionMgr>(env)),
      collective_groups_(env->task_name),
      rendezvous_mgr_(std::make_unique<RendezvousMgr>()) {}

Worker::~Worker() {
  const Status shutting_down = Aborted("worker ", env_->task_name, " is shutting down");
  session_mgr_->AbortAllSteps(shutting_down);
  rendezvous_mgr_->CleanupAll(shutting_down);
  MutexLock lock(mu_);
  while (running_steps_ != 0) steps_ended_.Wait(lock);
}

void Worker::StepStarted() {
  MutexLock lock(mu_);
  ++running_steps_;
}

void Worker::StepEnded() {
  MutexLock lock(mu_);
  if (--running_steps_ == 0) steps_ended_.NotifyAll();
}

void Worker::GetStatusAsync(CallOptions* /*options*/, const proto::GetStatusRequest* /*request*/,
                            proto::GetStatusResponse* response, StatusCallback done) {
  response->set_task_name(env_->task_name);
  for (const Device* device : env_->devices->ListDevices()) {
    proto::DeviceAttributes* attributes = response->add_device_attributes();
    attributes->set_name(device->name());
    attributes->set_device_type(device->device_type());
    attributes->set_incarnation(device->incarnation());
  }
  done(Status::OK());
}

void Worker::CreateWorkerSessionAsync(CallOptions* /*options*/,
                                      const proto::CreateWorkerSessionRequest* request,
                                      proto::CreateWorkerSessionResponse* /*response*/,
                                      StatusCallback done) {
  done(session_mgr_->CreateSession(request->session_handle(), request->config()));
}

void Worker::DeleteWorkerSessionAsync(CallOptions* /*options*/,
                                      const proto::DeleteWorkerSessionRequest* request,
                                      proto::DeleteWorkerSessionResponse* /*response*/,
                                      StatusCallback done) {
  session_mgr_->DeleteSession(request->session_handle());
  collective_groups_.ForgetSession(request->session_handle());
  done(Status::OK());
}

void Worker::RegisterGraphAsync(CallOptions* /*options*/,
                                const proto::RegisterGraphRequest* request,
                                proto::RegisterGraphResponse* response, StatusCallback done) {
  StatusOr<std::shared_ptr<WorkerSession>> session =
      session_mgr_->FindSession(request->session_handle());
  if (!session.ok()) {
    done(session.status());
    return;
  }
  StatusOr<std::string> handle = (*session)->graph_mgr()->Register(*request);
  if (!handle.ok()) {
    done(handle.status());
    return;
  }
  response->set_graph_handle(*handle);
  done(Status::OK());
}

void Worker::DeregisterGraphAsync(CallOptions* /*options*/,
                                  const proto::DeregisterGraphRequest* request,
                                  proto::DeregisterGraphResponse* /*response*/,
                                  StatusCallback done) {
  StatusOr<std::shared_ptr<WorkerSession>> session =
      session_mgr_->FindSession(request->session_handle());
  if (!session.ok()) {
    done(session.status());
    return;
  }
  done((*session)->graph_mgr()->Deregister(request->graph_handle()));
}

namespace {

// What the step owns until its `done`.
struct StepState {
  std::shared_ptr<WorkerSession> session;
  std::shared_ptr<RemoteRendezvous> rendezvous;
  // A traced step's; shared with the rendezvous, which records the step's RecvTensor calls.
  std::shared_ptr<StepStatsCollector> stats;
  // The session's collectives across tasks when it has them, else among this task's devices.
  // Declared after the stats it records into.
  std::unique_ptr<CollectiveExecutor> collectives;
  CancellationManager cancellation;
  int64_t token = 0;
};

}  // namespace

void Worker::RunGraphAsync(CallOptions* options, const proto::RunGraphRequest* request,
                           proto::RunGraphResponse* response, StatusCallback done) {
  done = CountedStep("worker", std::move(done));
  StatusOr<std::shared_ptr<WorkerSession>> found =
      session_mgr_->FindSession(request->session_handle());
  if (!found.ok()) {
    done(found.status());
    return;
  }
  const int64_t step_id = request->step_id();
  StatusOr<std::shared_ptr<RemoteRendezvous>> rendezvous = rendezvous_mgr_->FindOrCreate(step_id);
  if (!rendezvous.ok()) {
    done(rendezvous.status());
    return;
  }
  std::shared_ptr<WorkerSession> session = std::move(found).value();
  Status initialized = (*rendezvous)->Initialize(session->worker_cache(), env_->task_name);
  if (!initialized.ok()) {
    done(initialized);
    return;
  }

  auto state = std::make_shared<StepState>();
  state->session = session;
  state->rendezvous = std::move(rendezvous).value();
  if (request->collect_step_stats()) {
    state->stats = std::make_shared<StepStatsCollector>();
    state->rendezvous->SetStepStats(state->stats);
  }
  state->collectives = session->NewStepCollectives(step_id, state->stats.get());
  auto abort = [weak = std::weak_ptr<StepState>(state)](const Status& status) {
    if (auto alive = weak.lock()) {
      // Abort first: a Recv woken by the cancellation then reports the abort's reason.
      alive->rendezvous->StartAbort(status);
      alive->collectives->StartAbort(status);
      alive->cancellation.StartCancel();
    }
  };
  state->token = session->AddStep(abort);
  if (state->token == 0) {
    done(Aborted("session '", request->session_handle(), "' was deleted on worker ",
                 env_->task_name, " before step ", step_id, " started"));
    return;
  }
  StepStarted();
  if (options != nullptr) {
    options->SetCancelCallback([abort, step_id] {
      abort(Aborted("RunGraph of step ", step_id, " was cancelled by its caller"));
    });
  }

  GraphMgr::StepArgs args;
  args.step_id = step_id;
  args.rendezvous = state->rendezvous.get();
  args.collective_executor = state->collectives.get();
  args.cancellation_manager = &state->cancellation;
  ThreadPool* pool = env_->compute_pool;
  args.runner = [pool](std::function<void()> fn) {
    if (pool != nullptr) {
      pool->Schedule(std::move(fn));
    } else {
      fn();
    }
  };
  args.stats = state->stats.get();
  auto step_done = [this, state, options, request, done = std::move(done)](const Status& status) {
    if (options != nullptr) options->ClearCancelCallback();
    state->session->RemoveStep(state->token);
    // No peer can still ask for this step's values: the master sends no CleanupGraph for it.
    if (status.ok() && !state->session->graph_mgr()->SendsToOtherTasks(request->graph_handle())) {
      rendezvous_mgr_->Cleanup(request->step_id());
    }
    done(status);
    StepEnded();
  };
  // The step starts on the calling thread (a transport's callback thread or the master's): the
  // executor hands every expensive node but one chain to the compute pool and never blocks, and a
  // hop to the pool would cost a thread wake-up (~30 us here) on every step.
  state->session->graph_mgr()->ExecuteAsync(args, *request, response, std::move(step_done));
}

void Worker::CleanupGraphAsync(CallOptions* /*options*/, const proto::CleanupGraphRequest* request,
                               proto::CleanupGraphResponse* /*response*/, StatusCallback done) {
  rendezvous_mgr_->Cleanup(request->step_id());
  done(Status::OK());
}

void Worker::RecvTensorAsync(CallOptions* options, const proto::RecvTensorRequest* request,
                             TensorResponse* response, StatusCallback done) {
  StatusOr<Rendezvous::ParsedKey> key = Rendezvous::ParseKey(request->rendezvous_key());
  if (!key.ok()) {
    done(InvalidArgument("RecvTensor on worker ", env_->task_name, " for step ", request->step_id(),
                         ": ", key.status().message()));
    return;
  }
  Device* source = nullptr;
  for (Device* device : env_->devices->ListDevices()) {
    if (device->name() == key->src_device) source = device;
  }
  if (source == nullptr) {
    done(InvalidArgument("RecvTensor of rendezvous key '", key->full_key, "' names source device ",
                         key->src_device, ", which is not a device of worker ", env_->task_name));
    return;
  }
  if (source->incarnation() != key->src_incarnation) {
    done(Aborted("RecvTensor expects incarnation ", key->src_incarnation, " of ", source->name(),
                 " but it is ", source->incarnation(), ": the worker was probably restarted"));
    return;
  }
  StatusOr<std::shared_ptr<RemoteRendezvous>> rendezvous =
      rendezvous_mgr_->FindOrCreate(request->step_id());
  if (!rendezvous.ok()) {
    done(rendezvous.status());
    return;
  }
  // A cancelled RecvTensor ends only its own wait: the step is the master's to abort.
  auto cancellation = std::make_shared<CancellationManager>();
  if (options != nullptr)
    options->SetCancelCallback([cancellation] { cancellation->StartCancel(); });
  Rendezvous::Args recv_args;
  recv_args.cancellation_manager = cancellation.get();
  (*rendezvous)
      ->RecvLocalAsync(
          *key, recv_args,
          [cancellation, options, response, source, peer = TaskOfDevice(key->dst_device),
           done = std::move(done)](const Status& status, const Rendezvous::Args& /*send_args*/,
                                   const Rendezvous::Args& /*recv_args*/, const Tensor& value,
                                   bool is_dead) {
            if (options != nullptr) options->ClearCancelCallback();
            if (!status.ok() || value.IsInHostMemory()) {
              // Host tensors go out as they are (the bulk path reads their bytes in place).
              if (status.ok()) {
                response->tensor = value;
                response->is_dead = is_dead;
                metrics::RecordPeerBytes(peer, static_cast<int64_t>(value.TotalBytes()), 0);
              }
              done(status);
              return;
            }
            // A tensor in a device's own memory reaches the wire through host memory.
            CopyTensorAsync(source, /*dst_device=*/nullptr, {}, value,
                            [response, is_dead, peer, done](const Status& copied, Tensor on_host) {
                              if (copied.ok()) {
                                metrics::RecordPeerBytes(
                                    peer, static_cast<int64_t>(on_host.TotalBytes()), 0);
                                response->tensor = std::move(on_host);
                                response->is_dead = is_dead;
                              }
                              done(copied);
                            });
          });
}

void Worker::CompleteGroupAsync(CallOptions* options, const proto::CompleteGroupRequest* request,
                                proto::CompleteGroupResponse* response, StatusCallback done) {
  collective_groups_.CompleteGroupAsync(options, request, response, std::move(done));
}

}  // namespace weft
