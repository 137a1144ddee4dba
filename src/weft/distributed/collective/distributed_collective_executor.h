// DistributedCollectiveExecutor: one step's CollectiveExecutor in a process whose collective groups
// may span tasks. A group inside this process goes to a LocalCollectiveExecutor unchanged. For a
// group spanning tasks the collective is hierarchical: the members that are devices of this
// process meet first (the all-reduce sums them in memory through the LocalCollectiveExecutor;
// broadcast and all-gather gather them here), then one operation per process runs on the group's
// thread through its transport (host memory only: a member on a device with memory of its own is
// copied to host memory and back through the device's DeviceContext, device_staging.h), and every
// local member gets the result. A mean divides once, by the whole group's size, after the sum
// across processes. StartAbort fails the members still waiting; when an
// operation of the step is already queued or running across processes it also aborts that group,
// since the other processes cannot be told to skip it. With a StepStatsCollector (a traced step)
// each operation across processes is recorded there with its bytes and the other tasks as peers.
// Thread-safe; nothing touches the executor after the last member's done.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/distributed/collective/collective_group.h"
#include "weft/framework/collective.h"
#include "weft/runtime/collective/local_collective_executor.h"
#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {

class DistributedCollectiveExecutorMgr;

class DistributedCollectiveExecutor final : public CollectiveExecutor {
 public:
  // `stats` may be null; when set it outlives the executor.
  DistributedCollectiveExecutor(int64_t step_id, DistributedCollectiveExecutorMgr* mgr,
                                StepStatsCollector* stats = nullptr)
      : step_id_(step_id), mgr_(mgr), stats_(stats) {}
  DistributedCollectiveExecutor(const DistributedCollectiveExecutor&) = delete;
  DistributedCollectiveExecutor& operator=(const DistributedCollectiveExecutor&) = delete;

  void AllReduceAsync(const CollectiveParams& params, DeviceBase* device,
                      std::vector<Tensor> inputs, std::vector<Tensor>* outputs,
                      StatusCallback done) override;
  void BroadcastAsync(const CollectiveParams& params, DeviceBase* device, bool is_source,
                      DataType expected_dtype, const TensorShape& expected_shape, Tensor* value,
                      StatusCallback done) override;
  void AllGatherAsync(const CollectiveParams& params, DeviceBase* device, Tensor input,
                      Tensor* output, StatusCallback done) override;
  void StartAbort(const Status& status) override;

  // One member device of this process in a collective spanning tasks.
  struct Member {
    DeviceBase* device = nullptr;
    bool is_source = false;               // broadcast
    DataType dtype = DataType::kInvalid;  // broadcast: expected; all-gather: the input's
    TensorShape shape;
    std::vector<Tensor> values;  // all-reduce: the local sum; broadcast source / all-gather: input
    Tensor* target = nullptr;    // broadcast and all-gather
    std::vector<Tensor>* outputs = nullptr;  // all-reduce
    StatusCallback done;
  };
  enum class Kind { kAllReduce, kBroadcast, kAllGather };

 private:
  using Members = std::vector<Member>;
  struct Joining {
    Kind kind;
    Members members;
  };
  // Resolves the group, then runs `local` for an in-process group or `spanning` for one that spans
  // tasks; errors go to `done`.
  void WithGroupAsync(const CollectiveParams& params, DeviceBase* device,
                      std::function<void(std::shared_ptr<CollectiveGroup>)> spanning,
                      std::function<void()> local, StatusCallback done);
  // Join, with a member whose device has memory of its own staged through host memory.
  void JoinStaged(const std::shared_ptr<CollectiveGroup>& group, const CollectiveParams& params,
                  Kind kind, Member member);
  // Adds `member` to its instance; the member that completes the local part runs the operation.
  void Join(const std::shared_ptr<CollectiveGroup>& group, const CollectiveParams& params,
            Kind kind, Member member);
  // Runs the operation across processes for the complete local `members`, then their dones.
  void RunAcrossProcesses(const std::shared_ptr<CollectiveGroup>& group,
                          const CollectiveParams& params, Kind kind, Members members);

  const int64_t step_id_;
  DistributedCollectiveExecutorMgr* const mgr_;
  StepStatsCollector* const stats_;
  LocalCollectiveExecutor local_;

  Mutex mu_;
  std::map<std::pair<int64_t, int64_t>, Joining> joining_ WEFT_GUARDED_BY(mu_);
  Status abort_status_ WEFT_GUARDED_BY(mu_);
  // Groups with an operation of this step queued or running, and how many. Raw pointers: the
  // manager keeps its groups alive longer than any step, and a queued operation must not own its
  // group (the group's thread would then destroy the group it runs on).
  std::map<CollectiveGroup*, int> in_flight_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft
