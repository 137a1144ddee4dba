// MultiWorkerMirroredStrategy: synchronous data parallelism over the replicas of several worker
// processes, as the reference's strategy of that name. Every worker runs the same program: it
// builds the same graph with its own devices as replicas (devices()), runs it in its own session
// (session_options()), and the replicas of all workers all-reduce their gradients with collectives
// across processes, bucketed and chained in one order (AllReduceCrossDeviceOps with
// order_collectives). num_replicas_in_sync() counts every worker's replicas; SplitBatch splits this
// worker's share of the global batch over its replicas; DistributeDatasetsFromFunction gives this
// worker's dataset function input pipeline worker_index() of num_workers().
//
// The policy (extended()) is MirroredExtended's plus the collectives in every session
// (session_options()), the chief's initial values broadcast to all (BroadcastVariablesFromChief)
// and checkpoints written by the chief alone.
//
// Create() starts this task's server in-process (through the transport registered for
// `protocol`): it resolves collective groups (task 0 of the job leads them) and answers the other
// workers' heartbeats. Sessions made from session_options() must be closed before the strategy is
// destroyed. Thread-safe like Strategy.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "weft/distribute/all_reduce_cross_device_ops.h"
#include "weft/distribute/strategy.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/collective/distributed_collective_executor_mgr.h"
#include "weft/distributed/server.h"
#include "weft/runtime/session.h"

namespace weft::distribute {

struct MultiWorkerOptions {
  ServerConfig server{};  // the cluster and this worker's task in it (one job: every task a worker)
  int devices_per_worker = 1;
  std::string protocol = "grpc";
  // TCP between the workers' processes even on one host (tests and measures the cross-host path).
  bool force_tcp_collectives = false;
  // The host this worker runs on, as the collectives see it (workers of one host share memory);
  // empty: gethostname().
  std::string hostname{};
  // A collective waiting longer than this for other workers fails, naming them.
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
  // A worker that does not answer the heartbeat within this long fails every collective (0: none).
  int64_t heartbeat_timeout_ms = 4000;
  int64_t bytes_per_pack = int64_t{4} << 20;  // AllReduceOptions::bytes_per_pack
  // The type float32 gradients are all-reduced in: bfloat16 halves the bytes between workers
  // (AllReduceOptions::communication_dtype).
  DataType communication_dtype = DataType::kFloat;
  int intra_op_threads = 0;  // of the session's devices; 0: one per core
  // Elastic training: the membership generation this strategy's group serves. It is the group key
  // of every collective (carried in each collective message's header), so that an operation of an
  // earlier generation never meets one of this one. Every update of a step then waits for all of
  // the step's reductions (StrategyExtended::UpdatesAwaitEveryReduction). 0: not elastic.
  int64_t generation = 0;
  // The type of each worker's devices, made by `device_factories` (null: Weft's own) and run with
  // `kernel_registry` (null: every kernel of Weft).
  std::string device_type = "CPU";
  const DeviceFactoryRegistry* device_factories = nullptr;
  const KernelRegistry* kernel_registry = nullptr;
};

class MultiWorkerMirroredStrategy final : public Strategy {
 public:
  // InvalidArgument for a task outside the cluster, a cluster of several jobs or fewer than one
  // device; the server's and the collectives' errors otherwise.
  static StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> Create(MultiWorkerOptions options);
  ~MultiWorkerMirroredStrategy() override;

  bool is_chief() const { return worker_index() == 0; }
  const std::string& task_name() const { return server_->task_name(); }

  // This worker's session: its devices and the collectives across workers.
  SessionOptions session_options() const;
  // A node that sets every variable made through Scope() (variables()) on every replica of every
  // worker to the chief's replica-0 value, so that all replicas start bitwise identical whatever
  // each worker's seed: run it once, after the initializers, on every worker at once.
  StatusOr<Output> BroadcastVariablesFromChief(const weft::Scope& scope) const;

  DistributedCollectiveExecutorMgr& collectives() const { return *collectives_; }
  int64_t generation() const { return options_.generation; }

 private:
  // `all_reduce` is `cross_device_ops`, which the base owns.
  MultiWorkerMirroredStrategy(std::vector<std::string> devices,
                              std::unique_ptr<AllReduceCrossDeviceOps> cross_device_ops,
                              AllReduceCrossDeviceOps* all_reduce, MultiWorkerOptions options);

  const MultiWorkerOptions options_;
  AllReduceCrossDeviceOps* const all_reduce_;  // the base's cross_device_ops()
  // Declared before the collectives, which reach the other tasks through it.
  std::unique_ptr<ServerInterface> server_;
  std::unique_ptr<DistributedCollectiveExecutorMgr> collectives_;
};

}  // namespace weft::distribute
