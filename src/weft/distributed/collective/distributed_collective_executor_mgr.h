// DistributedCollectiveExecutorMgr: the collectives of a process whose groups span tasks (a worker
// of MultiWorkerMirroredStrategy). It gives each step a DistributedCollectiveExecutor, resolves
// each group once through the group's leader (CompleteGroup to task 0 of the job, with a deadline;
// the resolved CollectiveGroup is cached, so a steady-state step makes no resolution call), and
// watches the job's other tasks with a heartbeat once a group has formed: when one stops
// answering, every group is aborted with Unavailable naming it, so steps waiting on collectives
// fail instead of hanging.
// Thread-safe; outlives the sessions that use it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/core/timer.h"
#include "weft/distributed/collective/collective_group.h"
#include "weft/distributed/master/worker_liveness.h"
#include "weft/distributed/worker/worker_cache.h"
#include "weft/framework/collective.h"
#include "weft/framework/device_base.h"
#include "weft/runtime/collective/collective_executor_mgr.h"

namespace weft {

struct DistributedCollectiveOptions {
  std::string task_name;    // this process's task, "/job:worker/replica:0/task:1"
  std::string leader_task;  // where groups are resolved: task 0 of the job
  // Reaches the leader and the peers (the in-process worker for this task); not owned.
  WorkerCacheInterface* worker_cache = nullptr;
  // The job's other tasks, watched by the heartbeat and named when a group does not form.
  std::vector<std::string> peer_tasks;
  // The worker session whose graphs run these collectives (in-graph replication through a
  // master), so that its groups meet only its own members; empty for a process's own.
  std::string session_handle;
  std::string hostname;                   // empty: gethostname()
  std::string listen_host = "127.0.0.1";  // where this task's transport listeners bind
  // A registered transport's name ("tcp" even between processes of one host); empty: the policy.
  std::string transport;
  // One collective (or the forming of a group) waiting longer than this for other members fails.
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
  // A peer that does not answer the heartbeat within this long aborts the collectives (0: none).
  int64_t heartbeat_timeout_ms = 4000;
};

class DistributedCollectiveExecutorMgr final : public CollectiveExecutorMgrInterface {
 public:
  using GroupCallback = std::function<void(StatusOr<std::shared_ptr<CollectiveGroup>>)>;

  // InvalidArgument for a missing task, leader or worker cache. Starts the heartbeat.
  static StatusOr<std::unique_ptr<DistributedCollectiveExecutorMgr>> Create(
      DistributedCollectiveOptions options);
  ~DistributedCollectiveExecutorMgr() override;
  DistributedCollectiveExecutorMgr(const DistributedCollectiveExecutorMgr&) = delete;
  DistributedCollectiveExecutorMgr& operator=(const DistributedCollectiveExecutorMgr&) = delete;

  std::unique_ptr<CollectiveExecutor> NewStepExecutor(int64_t step_id,
                                                      StepStatsCollector* stats) override;

  // The group of `params.group_key` with `device` a member: at once when resolved, else after
  // this device joined it through the leader. Every error names the group.
  void GetGroupAsync(const CollectiveParams& params, DeviceBase* device, GroupCallback done);
  // Fails every group's pending and future operations with `status` (the first abort wins).
  void StartAbort(const Status& status);
  // OK, or why the collectives were aborted.
  Status status() const;
  // How the formed groups that span tasks reach the other processes ("shared memory", "TCP", ...;
  // one entry per distinct transport), for reports.
  std::vector<std::string> TransportNames() const;
  // Wall time this process's groups that span tasks have spent in transport operations (each
  // group's busy_nanos): a step's communication time is its change over the step.
  int64_t CommunicationNanos() const;
  // `values` (the same count on every task) of every task of the job, by task rank, through a
  // formed group that spans all of them, after the operations already enqueued there; one small
  // operation of the group, no RPC. FailedPrecondition before such a group formed (the first
  // step's collectives form it). Blocks; every task calls it at the same point of its program.
  StatusOr<std::vector<std::vector<double>>> AllGatherFromTasks(const std::vector<double>& values);

  const DistributedCollectiveOptions& options() const { return options_; }

 private:
  struct Resolving {
    int32_t group_size = 0;
    std::vector<std::string> devices;  // that asked the leader
    std::vector<GroupCallback> waiting;
    bool listening = false;  // once the listeners below were made
    std::map<std::string, std::unique_ptr<TransportListener>> listeners;  // by transport name
    std::map<std::string, std::string> addresses;                         // theirs, by name
    std::shared_ptr<CollectiveGroup> group;                               // once resolved
    Status status;                                                        // once failed
  };
  explicit DistributedCollectiveExecutorMgr(DistributedCollectiveOptions options);
  // Sends `device`'s CompleteGroup to the leader.
  void AskLeader(const CollectiveParams& params, DeviceBase* device,
                 const std::map<std::string, std::string>& addresses);
  // Listens for every transport the group may take; the first error names the transport.
  Status Listen(Resolving& resolving) const;
  void OnAnswer(int64_t group_key, const Status& status,
                const proto::CompleteGroupResponse& response);
  // `status` with the job's tasks that have no member in its list of joined devices.
  std::string MissingTasks(const Status& status) const;

  const DistributedCollectiveOptions options_;
  const uint64_t incarnation_;
  std::atomic<bool> formed_{false};  // some group formed: the heartbeat watches from then on

  struct Call;  // one CompleteGroup in flight

  mutable Mutex mu_;
  CondVar calls_done_;
  std::map<int64_t, Resolving> groups_ WEFT_GUARDED_BY(mu_);
  Status abort_status_ WEFT_GUARDED_BY(mu_);
  std::map<uint64_t, std::shared_ptr<Call>> calls_ WEFT_GUARDED_BY(mu_);
  uint64_t next_call_id_ WEFT_GUARDED_BY(mu_) = 1;
  bool stopping_ WEFT_GUARDED_BY(mu_) = false;

  Timer timer_;  // resolution deadlines and heartbeat rounds
  std::shared_ptr<WorkerLiveness> liveness_;
};

// The collectives of a worker session whose cluster (`cache`, not owned, outlives the result) has
// other tasks: groups that span tasks (the replicas of in-graph replication through a master)
// resolve through the cluster's first task and reach the others through the collective transports,
// like MultiWorkerMirroredStrategy's. Null for a cluster of one task. For
// WorkerEnv::collective_mgr_factory.
StatusOr<std::unique_ptr<CollectiveExecutorMgrInterface>> NewWorkerSessionCollectives(
    const std::string& task, const std::string& session_handle, WorkerCacheInterface* cache);

}  // namespace weft
