// CollectiveGroup (see the header): a queue drained by one thread; the transport is made by that
// thread on the first operation, since making it waits for every member process.
#include "weft/distributed/collective/collective_group.h"

#include <chrono>
#include <utility>

#include "weft/core/str_util.h"

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
  }
  WEFT_ASSIGN_OR_RETURN(group->factory_,
                        group->options_.registry->Choose(
                            group->options_.transport, group->options_.policy, group->task_hosts_));
  last_task.clear();
  for (const proto::CollectiveMember& member : resolved.members()) {
    if (member.task() == last_task) continue;
    last_task = member.task();
    auto address = member.transport_addresses().find(group->factory_->name);
    group->task_addresses_.push_back(
        address == member.transport_addresses().end() ? std::string() : address->second);
  }
  if (group->spans_tasks()) {
    group->thread_ =
        std::thread([raw = group.get(), destroyed = group->destroyed_] { raw->Loop(*destroyed); });
  }
  return group;
}

CollectiveGroup::CollectiveGroup(Options options) : options_(std::move(options)) {}

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
  destroyed_->store(true, std::memory_order_release);
  if (thread_.get_id() == std::this_thread::get_id()) {
    // The last owner let go inside a completion that this group's own thread ran (a worker
    // session ending with its last step): a thread cannot join itself. It sees `destroyed_` once
    // the completion returns and ends without touching the group again.
    thread_.detach();
  } else if (thread_.joinable()) {
    thread_.join();
  }
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
  TransportConnection connection;
  connection.options = std::move(transport_options);
  connection.member_hosts = task_hosts_;
  connection.member_addresses = task_addresses_;
  auto listener = options_.listeners.find(factory_->name);
  if (listener != options_.listeners.end()) connection.listener = std::move(listener->second);
  options_.listeners.clear();  // the other transports' listeners go unused
  if (factory_->listen && connection.listener == nullptr) {
    return Internal("collective group ", group_key_, " has no listener for transport '",
                    factory_->name, "'");
  }
  StatusOr<std::unique_ptr<CollectiveTransport>> made = factory_->connect(std::move(connection));
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

void CollectiveGroup::Loop(const std::atomic<bool>& destroyed) {
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
    if (status.ok()) {
      const auto start = std::chrono::steady_clock::now();
      status = next.op(*transport, next.identity);
      busy_nanos_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count(),
                            std::memory_order_relaxed);
    }
    if (!status.ok()) {
      status = status.message().find(next.identity.label) != std::string::npos
                   ? status
                   : status.WithContext(next.identity.label);
      StartAbort(status);
    }
    next.done(status);
    if (destroyed.load(std::memory_order_acquire)) return;  // the completion destroyed the group
  }
}

}  // namespace weft
