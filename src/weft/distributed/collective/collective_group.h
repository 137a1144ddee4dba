// CollectiveGroup: one resolved collective group as this process sees it (its members in the
// order every member agrees on, this task's rank among the group's tasks, how many members are
// devices of this process), and the one thread that runs the group's operations across processes
// in the order they are enqueued, through a CollectiveTransport it connects on the first
// operation: the registered transport that Options::transport names, else the one the policy
// picks from the tasks' hosts (collective_transport_registry.h).
// Every process enqueues the same operations in the same order (the graph orders its collectives),
// so the n-th run of an instance here meets the n-th run of it everywhere; EnqueueAsync numbers
// them. After a failure or StartAbort the group is poisoned: every later operation fails with the
// first error. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/distributed/collective/collective_transport.h"
#include "weft/distributed/collective/collective_transport_registry.h"
#include "weft/worker.pb.h"

namespace weft {

class CollectiveGroup {
 public:
  struct Options {
    proto::CompleteGroupResponse resolved;  // the leader's answer
    std::string task_name;                  // this process's task
    std::string hostname;                   // this process's host
    // A registered transport's name; empty: what `policy` picks.
    std::string transport;
    TransportPolicy policy = DefaultTransportPolicy;
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
    // The listeners whose addresses this process sent to the leader, by transport name.
    std::map<std::string, std::unique_ptr<TransportListener>> listeners;
    const CollectiveTransportRegistry* registry = &CollectiveTransportRegistry::Global();
  };
  // An operation across processes: runs on the group's thread with the transport and the
  // sequence number of this run of its instance.
  using Op = std::function<Status(CollectiveTransport& transport, const TransportOp& identity)>;

  // InvalidArgument when this task has no member in the group.
  static StatusOr<std::shared_ptr<CollectiveGroup>> Create(Options options);
  ~CollectiveGroup();  // fails queued operations with Cancelled and joins the thread
  CollectiveGroup(const CollectiveGroup&) = delete;
  CollectiveGroup& operator=(const CollectiveGroup&) = delete;

  int64_t group_key() const { return group_key_; }
  int group_size() const { return group_size_; }
  // The group's tasks in member order; this process is tasks()[task_rank()].
  const std::vector<std::string>& tasks() const { return tasks_; }
  int task_rank() const { return task_rank_; }
  bool spans_tasks() const { return tasks_.size() > 1; }
  // Members that are devices of this process.
  int local_size() const { return local_size_; }
  // The chosen transport's description ("shared memory", "TCP", ...): how the processes talk.
  const char* transport_name() const { return factory_->description.c_str(); }

  // Runs `op` after every operation enqueued before it, then `done` (on the group's thread) with
  // its status; `label` names the instance in errors. Fails at once when the group is poisoned.
  // Neither may own the group: the group's thread destroys them.
  void EnqueueAsync(int64_t instance_key, std::string label, Op op, StatusCallback done);
  // Poisons the group: fails queued operations and the running one (through the transport).
  void StartAbort(const Status& status);
  // Wall time the group's thread has spent inside transport operations (moving bytes and waiting
  // for the other members), since the group was made: a step's communication time is its change.
  int64_t busy_nanos() const { return busy_nanos_.load(std::memory_order_relaxed); }

 private:
  struct Queued {
    TransportOp identity;
    Op op;
    StatusCallback done;
  };
  explicit CollectiveGroup(Options options);
  // Runs the queued operations in order until the group stops or a completion destroys it.
  void Loop(const std::atomic<bool>& destroyed);
  Status MakeTransport();

  Options options_;
  int64_t group_key_ = 0;
  int group_size_ = 0;
  std::vector<std::string> tasks_;
  int task_rank_ = 0;
  int local_size_ = 0;
  const CollectiveTransportFactory* factory_ = nullptr;  // the chosen transport
  std::vector<std::string> task_hosts_;                  // by task rank
  std::vector<std::string> task_addresses_;  // each task's address for the chosen transport

  Mutex mu_;
  CondVar changed_;
  std::deque<Queued> queue_ WEFT_GUARDED_BY(mu_);
  std::map<int64_t, int64_t> sequences_ WEFT_GUARDED_BY(mu_);  // runs so far, by instance_key
  Status abort_status_ WEFT_GUARDED_BY(mu_);
  bool stopping_ WEFT_GUARDED_BY(mu_) = false;
  // Set once by the group's thread; StartAbort reaches a blocked operation through it.
  std::shared_ptr<CollectiveTransport> transport_ WEFT_GUARDED_BY(mu_);
  std::atomic<int64_t> busy_nanos_{0};
  std::thread thread_;
  // Set by the destructor; shared with the thread, which may outlive the group when a completion it
  // ran destroyed the group (see ~CollectiveGroup).
  std::shared_ptr<std::atomic<bool>> destroyed_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace weft
