// DistributedCollectiveExecutorMgr (see the header).
#include "weft/distributed/collective/distributed_collective_executor_mgr.h"

#include <algorithm>
#include <random>
#include <utility>

#include <unistd.h>

#include "weft/core/notification.h"
#include "weft/core/str_util.h"
#include "weft/distributed/call_options.h"
#include "weft/distributed/collective/distributed_collective_executor.h"
#include "weft/framework/device_name_utils.h"

namespace weft {

struct DistributedCollectiveExecutorMgr::Call {
  CallOptions options;
  proto::CompleteGroupRequest request;
  proto::CompleteGroupResponse response;
  int64_t deadline_timer = 0;
};

namespace {

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

uint64_t NewIncarnation() {
  std::random_device entropy;
  return (uint64_t{entropy()} << 32) ^ entropy();
}

std::string GroupLabel(int64_t group_key) { return StrCat("collective group ", group_key); }

// The device as a member of a group spanning tasks: under this task's name, since a worker's
// session names its devices "/job:localhost/replica:0/task:0/..." in every process.
std::string MemberDeviceName(const std::string& task_name, const DeviceBase& device) {
  StatusOr<ParsedDeviceName> task = ParseDeviceName(task_name);
  StatusOr<ParsedDeviceName> parsed = ParseDeviceName(device.name());
  if (!task.ok() || !parsed.ok() || !parsed->has_type || !parsed->has_id) {
    return StrCat(task_name, "/device:", device.name());
  }
  return FullName(task->job, task->replica, task->task, parsed->type, parsed->id);
}

}  // namespace

StatusOr<std::unique_ptr<DistributedCollectiveExecutorMgr>>
DistributedCollectiveExecutorMgr::Create(DistributedCollectiveOptions options) {
  if (options.task_name.empty() || options.leader_task.empty() || options.worker_cache == nullptr) {
    return InvalidArgument("distributed collectives need this task's name ('", options.task_name,
                           "'), the leader's ('", options.leader_task, "') and a worker cache");
  }
  if (options.hostname.empty()) options.hostname = HostName();
  std::unique_ptr<DistributedCollectiveExecutorMgr> mgr(
      new DistributedCollectiveExecutorMgr(std::move(options)));
  const DistributedCollectiveOptions& kept = mgr->options_;
  if (kept.heartbeat_timeout_ms > 0 && !kept.peer_tasks.empty()) {
    WorkerLiveness::Options liveness;
    liveness.tasks = kept.peer_tasks;
    liveness.worker_cache = kept.worker_cache;
    liveness.timer = &mgr->timer_;
    liveness.timeout_ms = kept.heartbeat_timeout_ms;
    // Only once a group formed: before that a worker may still be starting, and the group's own
    // deadline names it if it never comes.
    liveness.active = [raw = mgr.get()] { return raw->formed_.load(std::memory_order_acquire); };
    liveness.on_failure = [raw = mgr.get()](const std::string& task, const Status& status) {
      raw->StartAbort(
          Unavailable("task ", task, " stopped answering the heartbeat: ", status.message()));
    };
    mgr->liveness_ = WorkerLiveness::Start(std::move(liveness));
  }
  return mgr;
}

DistributedCollectiveExecutorMgr::DistributedCollectiveExecutorMgr(
    DistributedCollectiveOptions options)
    : options_(std::move(options)), incarnation_(NewIncarnation()) {}

DistributedCollectiveExecutorMgr::~DistributedCollectiveExecutorMgr() {
  if (liveness_ != nullptr) liveness_->Stop();
  std::vector<std::shared_ptr<Call>> in_flight;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    for (auto& [id, call] : calls_) in_flight.push_back(call);
  }
  for (auto& call : in_flight) call->options.StartCancel();
  MutexLock lock(mu_);
  while (!calls_.empty()) calls_done_.Wait(lock);
}

std::unique_ptr<CollectiveExecutor> DistributedCollectiveExecutorMgr::NewStepExecutor(
    int64_t step_id, StepStatsCollector* stats) {
  return std::make_unique<DistributedCollectiveExecutor>(step_id, this, stats);
}

Status DistributedCollectiveExecutorMgr::status() const {
  MutexLock lock(mu_);
  return abort_status_;
}

std::vector<std::string> DistributedCollectiveExecutorMgr::TransportNames() const {
  std::vector<std::string> names;
  MutexLock lock(mu_);
  for (const auto& [key, resolving] : groups_) {
    if (resolving.group == nullptr || !resolving.group->spans_tasks()) continue;
    const std::string name = resolving.group->transport_name();
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

int64_t DistributedCollectiveExecutorMgr::CommunicationNanos() const {
  int64_t nanos = 0;
  MutexLock lock(mu_);
  for (const auto& [key, resolving] : groups_) {
    if (resolving.group != nullptr && resolving.group->spans_tasks()) {
      nanos += resolving.group->busy_nanos();
    }
  }
  return nanos;
}

StatusOr<std::vector<std::vector<double>>> DistributedCollectiveExecutorMgr::AllGatherFromTasks(
    const std::vector<double>& values) {
  // Far above the keys a graph's collectives take, so that its runs never meet theirs.
  constexpr int64_t kTaskValuesInstanceKey = int64_t{1} << 62;
  std::shared_ptr<CollectiveGroup> group;
  {
    MutexLock lock(mu_);
    // The lowest key of the groups spanning every task: the same group on every task.
    for (const auto& [key, resolving] : groups_) {
      if (resolving.group != nullptr &&
          resolving.group->tasks().size() == options_.peer_tasks.size() + 1) {
        group = resolving.group;
        break;
      }
    }
  }
  if (group == nullptr) {
    return FailedPrecondition("no collective group spanning the job's ",
                              options_.peer_tasks.size() + 1, " tasks has formed yet on ",
                              options_.task_name);
  }
  const Tensor input = Tensor::FromVector(values);
  Tensor gathered;
  Status status;
  Notification done;
  group->EnqueueAsync(
      kTaskValuesInstanceKey,
      StrCat("values gathered from every task (group_key ", group->group_key(), ", instance_key ",
             kTaskValuesInstanceKey, ")"),
      [&](CollectiveTransport& transport, const TransportOp& identity) {
        return transport.AllGather(identity, input, &gathered);
      },
      [&](const Status& result) {
        status = result;
        done.Notify();
      });
  done.WaitForNotification();
  WEFT_RETURN_IF_ERROR(status);
  std::vector<std::vector<double>> by_task(group->tasks().size());
  const double* flat = gathered.data<double>();
  for (size_t t = 0; t < by_task.size(); ++t) {
    by_task[t].assign(flat + t * values.size(), flat + (t + 1) * values.size());
  }
  return by_task;
}

void DistributedCollectiveExecutorMgr::StartAbort(const Status& status) {
  std::vector<std::shared_ptr<CollectiveGroup>> groups;
  std::vector<GroupCallback> waiting;
  Status abort_status;
  {
    MutexLock lock(mu_);
    if (!abort_status_.ok()) return;
    abort_status_ = status.ok() ? Aborted("collectives aborted without a reason") : status;
    abort_status = abort_status_;
    for (auto& [key, resolving] : groups_) {
      if (resolving.group != nullptr) groups.push_back(resolving.group);
      for (GroupCallback& callback : resolving.waiting) waiting.push_back(std::move(callback));
      resolving.waiting.clear();
      if (resolving.group == nullptr && resolving.status.ok()) resolving.status = abort_status;
    }
  }
  for (auto& group : groups) group->StartAbort(abort_status);
  for (GroupCallback& callback : waiting) callback(abort_status);
}

void DistributedCollectiveExecutorMgr::GetGroupAsync(const CollectiveParams& params,
                                                     DeviceBase* device, GroupCallback done) {
  const int64_t key = params.group_key;
  std::map<std::string, std::string> addresses;
  bool ask = false;
  StatusOr<std::shared_ptr<CollectiveGroup>> ready = Internal("unset");
  bool answer_now = false;
  {
    MutexLock lock(mu_);
    Resolving& resolving = groups_[key];
    if (resolving.group_size == 0) resolving.group_size = params.group_size;
    if (!abort_status_.ok() && resolving.group == nullptr) {
      ready = abort_status_.WithContext(GroupLabel(key));
      answer_now = true;
    } else if (resolving.group != nullptr) {
      if (resolving.group->group_size() != params.group_size) {
        ready = InvalidArgument(GroupLabel(key), ": device '", device->name(), "' has group_size ",
                                params.group_size, ", but the group formed with ",
                                resolving.group->group_size());
      } else {
        ready = resolving.group;
      }
      answer_now = true;
    } else if (!resolving.status.ok()) {
      ready = resolving.status;
      answer_now = true;
    } else {
      resolving.waiting.push_back(std::move(done));
      bool asked = false;
      for (const std::string& asked_device : resolving.devices) {
        if (asked_device == device->name()) asked = true;
      }
      if (!asked) {
        resolving.devices.push_back(device->name());
        if (!resolving.listening) {
          resolving.listening = true;
          resolving.status = Listen(resolving).WithContext(GroupLabel(key));
        }
        addresses = resolving.addresses;
        ask = resolving.status.ok();
      }
      if (!resolving.status.ok()) {
        std::vector<GroupCallback> failed = std::move(resolving.waiting);
        resolving.waiting.clear();
        Status status = resolving.status;
        lock.Unlock();
        for (GroupCallback& callback : failed) callback(status);
        return;
      }
    }
  }
  if (answer_now) {
    done(std::move(ready));
    return;
  }
  if (ask) AskLeader(params, device, addresses);
}

Status DistributedCollectiveExecutorMgr::Listen(Resolving& resolving) const {
  const CollectiveTransportRegistry& registry = CollectiveTransportRegistry::Global();
  // A transport named in the options is the only one the group can take.
  std::vector<std::string> names = registry.Names();
  if (!options_.transport.empty()) names = {options_.transport};
  for (const std::string& name : names) {
    WEFT_ASSIGN_OR_RETURN(const CollectiveTransportFactory* factory, registry.Find(name));
    if (!factory->listen) continue;
    StatusOr<std::unique_ptr<TransportListener>> listener = factory->listen(options_.listen_host);
    if (!listener.ok()) {
      return listener.status().WithContext(StrCat("listening for transport '", name, "'"));
    }
    resolving.addresses[name] = (*listener)->address();
    resolving.listeners[name] = std::move(listener).value();
  }
  return Status::OK();
}

void DistributedCollectiveExecutorMgr::AskLeader(
    const CollectiveParams& params, DeviceBase* device,
    const std::map<std::string, std::string>& addresses) {
  auto call = std::make_shared<Call>();
  call->request.set_group_key(params.group_key);
  call->request.set_group_size(params.group_size);
  call->request.set_session_handle(options_.session_handle);
  call->request.set_device_type(device->device_type());
  proto::CollectiveMember* member = call->request.mutable_member();
  member->set_task(options_.task_name);
  member->set_device(MemberDeviceName(options_.task_name, *device));
  member->set_hostname(options_.hostname);
  member->mutable_transport_addresses()->insert(addresses.begin(), addresses.end());
  member->set_incarnation(incarnation_);
  const int64_t timeout_ms = options_.collective_timeout.count();
  call->request.set_timeout_ms(timeout_ms);
  // The leader answers at timeout_ms naming who joined; this deadline only catches a leader that
  // cannot answer at all.
  call->options.set_timeout_ms(timeout_ms + 5000);
  call->options.set_wait_for_ready(true);
  uint64_t id = 0;
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    id = next_call_id_++;
    calls_[id] = call;
  }
  call->deadline_timer =
      timer_.Schedule(timeout_ms + 5000, [call] { call->options.StartCancel(); });
  WorkerInterface* leader = options_.worker_cache->GetOrCreateWorker(options_.leader_task);
  auto finish = [this, id, call](const Status& status) {
    timer_.Cancel(call->deadline_timer);
    OnAnswer(call->request.group_key(), status, call->response);
    MutexLock lock(mu_);
    calls_.erase(id);
    calls_done_.NotifyAll();
  };
  if (leader == nullptr) {
    finish(Unavailable("the collective group leader ", options_.leader_task,
                       " is not in the cluster"));
    return;
  }
  leader->CompleteGroupAsync(&call->options, &call->request, &call->response, finish);
}

std::string DistributedCollectiveExecutorMgr::MissingTasks(const Status& status) const {
  std::string missing;
  for (const std::string& task : options_.peer_tasks) {
    if (status.message().find(task + "/") != std::string::npos) continue;
    missing += missing.empty() ? task : ", " + task;
  }
  return missing;
}

void DistributedCollectiveExecutorMgr::OnAnswer(int64_t group_key, const Status& status,
                                                const proto::CompleteGroupResponse& response) {
  std::vector<GroupCallback> waiting;
  StatusOr<std::shared_ptr<CollectiveGroup>> result = Internal("unset");
  {
    MutexLock lock(mu_);
    Resolving& resolving = groups_[group_key];
    if (resolving.group != nullptr || !resolving.status.ok()) return;  // another device's answer
    if (!status.ok()) {
      std::string context =
          StrCat(GroupLabel(group_key), " (", resolving.group_size,
                 " members) did not form through its leader ", options_.leader_task);
      if (status.code() == Code::kDeadlineExceeded) {
        const std::string missing = MissingTasks(status);
        if (!missing.empty()) context += StrCat("; tasks with no member in it: ", missing);
      }
      resolving.status = Status(status.code(), StrCat(context, ": ", status.message()));
      result = resolving.status;
    } else {
      CollectiveGroup::Options group_options;
      group_options.resolved = response;
      group_options.task_name = options_.task_name;
      group_options.hostname = options_.hostname;
      group_options.transport = options_.transport;
      group_options.timeout = options_.collective_timeout;
      group_options.listeners = std::move(resolving.listeners);
      result = CollectiveGroup::Create(std::move(group_options));
      if (result.ok()) {
        resolving.group = *result;
        formed_.store(true, std::memory_order_release);
        if (!abort_status_.ok()) (*result)->StartAbort(abort_status_);
      } else {
        resolving.status = result.status();
      }
    }
    waiting = std::move(resolving.waiting);
    resolving.waiting.clear();
  }
  for (GroupCallback& callback : waiting) callback(result);
}

StatusOr<std::unique_ptr<CollectiveExecutorMgrInterface>> NewWorkerSessionCollectives(
    const std::string& task, const std::string& session_handle, WorkerCacheInterface* cache) {
  const std::vector<std::string> tasks = cache->ListWorkers();
  if (tasks.size() < 2) return std::unique_ptr<CollectiveExecutorMgrInterface>();
  DistributedCollectiveOptions options;
  options.task_name = task;
  options.leader_task = tasks[0];
  options.worker_cache = cache;
  options.session_handle = session_handle;
  for (const std::string& other : tasks) {
    if (other != task) options.peer_tasks.push_back(other);
  }
  const std::string address = cache->TaskAddress(task);
  const size_t colon = address.rfind(':');
  if (colon != std::string::npos && colon > 0) {
    const std::string host = address.substr(0, colon);
    options.listen_host = host == "localhost" ? "127.0.0.1" : host;
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<DistributedCollectiveExecutorMgr> collectives,
                        DistributedCollectiveExecutorMgr::Create(std::move(options)));
  return std::unique_ptr<CollectiveExecutorMgrInterface>(std::move(collectives));
}

}  // namespace weft
