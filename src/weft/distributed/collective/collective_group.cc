// CollectiveGroup (see the header): a queue drained by one thread; the transport is made by that
// thread on the first operation, since making it waits for every member process.
#include "weft/distributed/collective/collective_group.h"

#include <set>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/distributed/collective/hierarchical_transport.h"
#include "weft/distributed/collective/shm_transport.h"

namespace weft {

StatusOr<std::shared_ptr<CollectiveGroup>> CollectiveGroup::Create(Options options) {
  std::shared_ptr<CollectiveGroup> group(new CollectiveGroup(std::move(options)));
  const proto::CompleteGroupResponse& resolved = group->options_.resolved;
  group->group_key_ = resolved.group_key();
  group->group_size_ = resolved.group_size();
  group->task_rank_ = -1;
  if (resolved.members_size() != resolved.group_size()) {
    return Internal("collective group ", resolved.group_key(), ": the leader answered ",
                    resolved.members_size(), " members for group_size ", resolved.group_size());
  }
  for (const proto::CollectiveMember& member : resolved.members()) {
    if (group->tasks_.empty() || group->tasks_.back() != member.task()) {
      group->tasks_.push_back(member.task());
    }
    if (member.task() == group->options_.task_name) {
      group->task_rank_ = static_cast<int>(group->tasks_.size()) - 1;
      ++group->local_size_;
    }
  }
  if (group->task_rank_ < 0) {
    return InvalidArgument("collective group ", resolved.group_key(), " has no member on task ",
                           group->options_.task_name);
  }
  // One host per task (its first member's), in task order.
  std::string last_task;
  for (const proto::CollectiveMember& member : resolved.members()) {
    if (member.task() == last_task) continue;
    last_task = member.task();
    group->task_hosts_.push_back(member.hostname());
    group->task_addresses_.push_back(member.transport_address());
  }
  const std::set<std::string> hosts(group->task_hosts_.begin(), group->task_hosts_.end());
  if (group->options_.force_tcp || hosts.size() == group->task_hosts_.size()) {
    group->transport_kind_ = TransportKind::kTcp;  // also when every host runs one task
  } else if (hosts.size() == 1) {
    group->transport_kind_ = TransportKind::kSharedMemory;
  } else {
    group->transport_kind_ = TransportKind::kHierarchical;
  }
  if (group->spans_tasks()) group->thread_ = std::thread([raw = group.get()] { raw->Loop(); });
  return group;
}

CollectiveGroup::CollectiveGroup(Options options) : options_(std::move(options)) {}

const char* CollectiveGroup::transport_name() const {
  switch (transport_kind_) {
    case TransportKind::kSharedMemory:
      return "shared memory";
    case TransportKind::kTcp:
      return "TCP";
    case TransportKind::kHierarchical:
      return "shared memory in each host, TCP between hosts";
  }
  return "unknown";
}

CollectiveGroup::~CollectiveGroup() {
  std::deque<Queued> dropped;
  std::shared_ptr<CollectiveTransport> transport;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    if (abort_status_.ok()) {
      abort_status_ = Cancelled("collective group ", group_key_, " was shut down");
    }
    dropped.swap(queue_);
    transport = transport_;
    changed_.NotifyAll();
  }
  if (transport != nullptr) transport->StartAbort(Cancelled("the collective group is shut down"));
  for (Queued& queued : dropped) {
    queued.done(
        Cancelled(queued.identity.label, ": collective group ", group_key_, " was shut down"));
  }
  if (thread_.joinable()) thread_.join();
}

void CollectiveGroup::EnqueueAsync(int64_t instance_key, std::string label, Op op,
                                   StatusCallback done) {
  Status failed;
  {
    MutexLock lock(mu_);
    if (!abort_status_.ok()) {
      failed = abort_status_.WithContext(label);
    } else {
      TransportOp identity;
      identity.instance_key = instance_key;
      identity.sequence = sequences_[instance_key]++;
      identity.label = std::move(label);
      queue_.push_back(Queued{std::move(identity), std::move(op), std::move(done)});
      changed_.NotifyOne();
      return;
    }
  }
  done(failed);
}

void CollectiveGroup::StartAbort(const Status& status) {
  std::deque<Queued> dropped;
  std::shared_ptr<CollectiveTransport> transport;
  Status abort_status;
  {
    MutexLock lock(mu_);
    if (!abort_status_.ok()) return;  // the first abort wins
    abort_status_ =
        Status(status.ok() ? Code::kAborted : status.code(),
               StrCat("collective group ", group_key_,
                      " was aborted: ", status.ok() ? "no reason given" : status.message()));
    abort_status = abort_status_;
    dropped.swap(queue_);
    transport = transport_;
  }
  if (transport != nullptr) transport->StartAbort(abort_status);
  for (Queued& queued : dropped) queued.done(abort_status.WithContext(queued.identity.label));
}

Status CollectiveGroup::MakeTransport() {
  TransportOptions transport_options;
  transport_options.rank = task_rank_;
  transport_options.world_size = static_cast<int>(tasks_.size());
  transport_options.member_names = tasks_;
  transport_options.group_token = options_.resolved.group_token();
  transport_options.timeout = options_.timeout;
  StatusOr<std::unique_ptr<CollectiveTransport>> made = Internal("no transport");
  if (transport_kind_ == TransportKind::kSharedMemory) {
    made = CreateShmTransport(transport_options);
  } else if (options_.listener == nullptr) {
    made = Internal("collective group ", group_key_, " has no TCP listener");
  } else if (transport_kind_ == TransportKind::kTcp) {
    made = CreateTcpTransport(transport_options, std::move(options_.listener), task_addresses_);
  } else {
    made = CreateHierarchicalTransport(transport_options, task_hosts_, std::move(options_.listener),
                                       task_addresses_);
  }
  if (!made.ok()) {
    return made.status().WithContext(StrCat("connecting collective group ", group_key_, " (",
                                            transport_name(), ", ", tasks_.size(), " tasks)"));
  }
  MutexLock lock(mu_);
  transport_ = std::shared_ptr<CollectiveTransport>(std::move(made).value());
  // An abort that came while connecting reaches the new transport too.
  if (!abort_status_.ok()) transport_->StartAbort(abort_status_);
  return Status::OK();
}

void CollectiveGroup::Loop() {
  bool connected = false;
  while (true) {
    Queued next;
    std::shared_ptr<CollectiveTransport> transport;
    {
      MutexLock lock(mu_);
      while (queue_.empty() && !stopping_) changed_.Wait(lock);
      if (queue_.empty()) return;  // stopping
      next = std::move(queue_.front());
      queue_.pop_front();
      transport = transport_;
    }
    Status status;
    if (!connected) {
      status = MakeTransport();
      connected = true;
      MutexLock lock(mu_);
      transport = transport_;
    }
    if (status.ok() && transport == nullptr) status = Internal("no transport");
    if (status.ok()) status = next.op(*transport, next.identity);
    if (!status.ok()) {
      status = status.message().find(next.identity.label) != std::string::npos
                   ? status
                   : status.WithContext(next.identity.label);
      StartAbort(status);
    }
    next.done(status);
  }
}

}  // namespace weft
