#include "weft/distributed/worker/rendezvous_mgr.h"

#include <utility>
#include <vector>

#include "weft/core/metrics.h"
#include "weft/core/str_util.h"
#include "weft/distributed/call_options.h"
#include "weft/framework/cancellation.h"
#include "weft/framework/device_name_utils.h"

namespace weft {

// One RecvTensor call in flight; shared by the rendezvous (to cancel it) and the call's callback.
struct RemoteRendezvous::RemoteCall {
  CallOptions options;
  proto::RecvTensorRequest request;
  TensorResponse response;
};

RemoteRendezvous::RemoteRendezvous(int64_t step_id) : step_id_(step_id) {}

RemoteRendezvous::~RemoteRendezvous() = default;

Status RemoteRendezvous::Initialize(WorkerCacheInterface* worker_cache, std::string task_name) {
  MutexLock lock(mu_);
  if (initialized_) {
    if (task_name_ != task_name) {
      return Internal("the rendezvous of step ", step_id_, " was initialized for task ", task_name_,
                      " and again for task ", task_name);
    }
    return Status::OK();
  }
  initialized_ = true;
  task_name_ = std::move(task_name);
  worker_cache_ = worker_cache;
  return Status::OK();
}

void RemoteRendezvous::SetStepStats(std::shared_ptr<StepStatsCollector> stats) {
  MutexLock lock(mu_);
  stats_ = std::move(stats);
}

namespace {

// Whether `device` lives on `task_name` ("/job:w/replica:0/task:1" owns ".../task:1/device:CPU:0").
bool DeviceIsOnTask(std::string_view device, std::string_view task_name) {
  if (device.substr(0, task_name.size()) != task_name) return false;
  return device.size() == task_name.size() || device[task_name.size()] == '/';
}

// Records one RecvTensor call of a traced step (before its _Recv completes, so before the step
// and its collector end) on the receiving device's row.
void RecordRecvTensor(int64_t start_nanos, const std::string& key, const std::string& edge_name,
                      const std::string& source_task, const Status& status,
                      const TensorResponse& response, StepStatsCollector* stats) {
  StatusOr<Rendezvous::ParsedKey> parsed = Rendezvous::ParseKey(key);
  if (!parsed.ok()) return;  // the call was made with it: cannot happen
  proto::NodeExecStats event;
  SetStatsTimes(start_nanos, StepStatsNowNanos(), &event);
  event.set_node_name(edge_name);
  event.set_op("RecvTensor");
  event.set_kind(proto::NodeExecStats::RECV_TENSOR);
  event.set_rendezvous_key(key);
  event.add_peers(source_task);
  const int64_t bytes = status.ok() ? static_cast<int64_t>(response.tensor.TotalBytes()) : 0;
  event.set_transfer_bytes(bytes);
  event.set_timeline_label(StrCat("RecvTensor ", edge_name, " (", bytes, " bytes) from ",
                                  source_task, status.ok() ? "" : " failed"));
  stats->Save(std::string(parsed->dst_device), std::move(event));
}

}  // namespace

Status RemoteRendezvous::Send(const ParsedKey& key, const Args& send_args, const Tensor& value,
                              bool is_dead) {
  {
    MutexLock lock(mu_);
    if (!initialized_) {
      return Internal("Send of rendezvous key '", key.full_key, "' in step ", step_id_,
                      " before the step's rendezvous was initialized");
    }
    if (!DeviceIsOnTask(key.src_device, task_name_)) {
      return InvalidArgument("rendezvous key '", key.full_key, "' sends from ", key.src_device,
                             ", which is not a device of task ", task_name_);
    }
  }
  return local_.Send(key, send_args, value, is_dead);
}

void RemoteRendezvous::RecvAsync(const ParsedKey& key, const Args& recv_args, DoneCallback done) {
  WorkerCacheInterface* worker_cache = nullptr;
  bool initialized = false;
  bool local = false;
  {
    MutexLock lock(mu_);
    initialized = initialized_;
    local = DeviceIsOnTask(key.src_device, task_name_);
    worker_cache = worker_cache_;
  }
  if (!initialized) {
    done(Internal("Recv of rendezvous key '", key.full_key, "' in step ", step_id_,
                  " before the step's rendezvous was initialized"),
         Args(), recv_args, Tensor(), false);
    return;
  }
  if (local) {
    local_.RecvAsync(key, recv_args, std::move(done));
    return;
  }
  RecvFromRemoteAsync(key, recv_args, worker_cache, std::move(done));
}

void RemoteRendezvous::RecvLocalAsync(const ParsedKey& key, const Args& recv_args,
                                      DoneCallback done) {
  local_.RecvAsync(key, recv_args, std::move(done));
}

void RemoteRendezvous::RecvFromRemoteAsync(const ParsedKey& key, const Args& recv_args,
                                           WorkerCacheInterface* worker_cache, DoneCallback done) {
  StatusOr<ParsedDeviceName> source = ParseDeviceName(key.src_device);
  if (!source.ok() || !source->has_job || !source->has_replica || !source->has_task) {
    done(Internal("rendezvous key '", key.full_key, "' names ", key.src_device,
                  ", which is not a valid remote source device"),
         Args(), recv_args, Tensor(), false);
    return;
  }
  const std::string source_task =
      StrCat("/job:", source->job, "/replica:", source->replica, "/task:", source->task);
  WorkerInterface* worker =
      worker_cache == nullptr ? nullptr : worker_cache->GetOrCreateWorker(source_task);
  if (worker == nullptr) {
    done(Internal("no worker known as ", source_task, " (receiving rendezvous key '", key.full_key,
                  "' in step ", step_id_, ")"),
         Args(), recv_args, Tensor(), false);
    return;
  }

  auto call = std::make_shared<RemoteCall>();
  call->request.set_step_id(step_id_);
  call->request.set_rendezvous_key(key.full_key);
  call->request.set_bulk_ok(true);
  int64_t call_id = 0;
  Status aborted;
  std::shared_ptr<StepStatsCollector> stats;
  {
    MutexLock lock(mu_);
    aborted = abort_status_;
    stats = stats_;
    if (aborted.ok()) {
      call_id = ++next_call_id_;
      calls_[call_id] = call;
    }
  }
  if (!aborted.ok()) {
    done(aborted, Args(), recv_args, Tensor(), false);
    return;
  }

  // The step's own cancellation ends the wait too, as it does for a local Recv.
  CancellationManager* cancellation = recv_args.cancellation_manager;
  CancellationManager::Token token = 0;
  bool registered = false;
  if (cancellation != nullptr) {
    token = cancellation->NewToken();
    registered = cancellation->RegisterCallback(token, [call] { call->options.StartCancel(); });
    if (!registered) {
      {
        MutexLock lock(mu_);
        calls_.erase(call_id);
      }
      done(Cancelled("Recv of rendezvous key '", key.full_key,
                     "' was cancelled: the step was already cancelled"),
           Args(), recv_args, Tensor(), false);
      return;
    }
  }

  const int64_t start_nanos = stats != nullptr ? StepStatsNowNanos() : 0;
  auto on_done = [self = shared_from_this(), call, call_id, cancellation, token, registered,
                  full_key = key.full_key, edge_name = std::string(key.edge_name), source_task,
                  recv_args, stats, start_nanos, done = std::move(done)](const Status& status) {
    if (registered) cancellation->DeregisterCallback(token);
    if (stats != nullptr) {
      RecordRecvTensor(start_nanos, full_key, edge_name, source_task, status, call->response,
                       stats.get());
    }
    Status abort_status;
    {
      MutexLock lock(self->mu_);
      self->calls_.erase(call_id);
      abort_status = self->abort_status_;
    }
    Status result = status;
    if (!status.ok()) {
      if (!abort_status.ok()) {
        // The call was cancelled because the step aborted: the abort's cause is the answer.
        result = abort_status;
      } else if (cancellation != nullptr && cancellation->IsCancelled()) {
        result = Cancelled("Recv of rendezvous key '", full_key, "' was cancelled");
      } else {
        result = Status(status.code(), StrCat("RecvTensor of '", edge_name, "' from ", source_task,
                                              " failed: ", status.message()));
      }
      done(result, Args(), recv_args, Tensor(), false);
      return;
    }
    metrics::RecordPeerBytes(source_task, 0,
                             static_cast<int64_t>(call->response.tensor.TotalBytes()));
    done(result, Args(), recv_args, call->response.tensor, call->response.is_dead);
  };
  // The transport may finish the call, and `done` drop the step's last reference to this
  // rendezvous, before RecvTensorAsync returns; this reference keeps `this` alive until the end.
  std::shared_ptr<RemoteRendezvous> keep_alive = shared_from_this();
  worker->RecvTensorAsync(&call->options, &call->request, &call->response, std::move(on_done));

  // An abort between registering the call and issuing it found no transport callback to run; the
  // CallOptions remember the cancellation, but cancel again in case the transport registered late.
  bool aborted_meanwhile = false;
  {
    MutexLock lock(mu_);
    aborted_meanwhile = !abort_status_.ok();
  }
  if (aborted_meanwhile) call->options.StartCancel();
}

void RemoteRendezvous::StartAbort(const Status& status) {
  std::vector<std::shared_ptr<RemoteCall>> calls;
  {
    MutexLock lock(mu_);
    if (abort_status_.ok()) abort_status_ = status;
    for (const auto& [id, call] : calls_) calls.push_back(call);
  }
  local_.StartAbort(status);
  for (const auto& call : calls) call->options.StartCancel();
}

RendezvousMgr::RendezvousMgr(size_t max_cleaned_up_steps)
    : max_cleaned_up_steps_(max_cleaned_up_steps) {}

RendezvousMgr::~RendezvousMgr() {
  CleanupAll(Aborted("the worker's rendezvous manager was destroyed"));
}

StatusOr<std::shared_ptr<RemoteRendezvous>> RendezvousMgr::FindOrCreate(int64_t step_id) {
  MutexLock lock(mu_);
  auto it = table_.find(step_id);
  if (it != table_.end()) return it->second;
  if (cleaned_up_.count(step_id) != 0) {
    return Aborted("step ", step_id, " was cleaned up");
  }
  auto rendezvous = std::make_shared<RemoteRendezvous>(step_id);
  table_[step_id] = rendezvous;
  return rendezvous;
}

void RendezvousMgr::Cleanup(int64_t step_id) {
  std::shared_ptr<RemoteRendezvous> rendezvous;
  {
    MutexLock lock(mu_);
    auto it = table_.find(step_id);
    if (it != table_.end()) {
      rendezvous = std::move(it->second);
      table_.erase(it);
    }
    if (max_cleaned_up_steps_ > 0 && cleaned_up_.insert(step_id).second) {
      cleaned_up_order_.push_back(step_id);
      if (cleaned_up_order_.size() > max_cleaned_up_steps_) {
        cleaned_up_.erase(cleaned_up_order_.front());
        cleaned_up_order_.pop_front();
      }
    }
  }
  if (rendezvous != nullptr) rendezvous->StartAbort(Aborted("step ", step_id, " was cleaned up"));
}

void RendezvousMgr::CleanupAll(const Status& status) {
  std::map<int64_t, std::shared_ptr<RemoteRendezvous>> table;
  {
    MutexLock lock(mu_);
    table.swap(table_);
  }
  for (const auto& [step_id, rendezvous] : table) rendezvous->StartAbort(status);
}

}  // namespace weft
