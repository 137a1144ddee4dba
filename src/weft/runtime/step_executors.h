// StepExecutors: what a session runs for one (feeds, fetches, targets) signature. The step graph is
// placed on the session's devices and, when it spans several, partitioned into one graph per
// device joined by _Send/_Recv pairs; the partition of a device with memory of its own also gets
// pairs where an op keeps an arg in host memory (graph/memory_types.h); each partition gets its own
// Executor. Running a step starts every partition at once with one Rendezvous, one
// CollectiveExecutor and one cancellation shared by all of them — the caller injects the
// collective executor (and, across processes, the rendezvous); the first error aborts the
// rendezvous and the collectives and cancels the other partitions, and is what the step returns.
// Immutable once built; steps may run concurrently.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/config.pb.h"
#include "weft/framework/call_frame.h"
#include "weft/framework/kernel_registry.h"
#include "weft/graph/graph.h"
#include "weft/runtime/device_mgr.h"
#include "weft/runtime/executor/executor.h"

namespace weft {

class StepExecutors {
 public:
  struct Partition {
    Device* device = nullptr;
    std::unique_ptr<Executor> executor;
  };

  // Places `step_graph` (from BuildStepGraph) on `devices` (default: the first), partitions it
  // when it spans several devices, and builds the executors. Errors name the node at fault.
  static StatusOr<std::unique_ptr<StepExecutors>> Create(std::unique_ptr<Graph> step_graph,
                                                         const DeviceMgr& devices,
                                                         const KernelRegistry& kernels,
                                                         const proto::ConfigProto& config);

  // Builds one executor per device from graphs placed and partitioned elsewhere (a worker's share
  // of a cluster step: device name -> GraphDef). Errors name the device or the node at fault.
  static StatusOr<std::unique_ptr<StepExecutors>> CreateFromPartitions(
      const std::map<std::string, proto::GraphDef>& partitions, const DeviceMgr& devices,
      const OpRegistry& ops, const KernelRegistry& kernels);

  struct RunArgs {
    int64_t step_id = 0;
    CallFrame* call_frame = nullptr;
    CancellationManager* cancellation_manager = nullptr;  // the step's; required
    Executor::Runner runner;                              // inter-op threads; required
    StepStatsCollector* stats = nullptr;
    // The step's rendezvous when it spans processes (a worker's RemoteRendezvous); null gives the
    // step a fresh in-process one. Aborted with the step's first error either way.
    Rendezvous* rendezvous = nullptr;
    // The step's collectives (a LocalCollectiveExecutor in one process); required, used by this
    // step only, and kept alive until `done`. Aborted with the step's first error or cancellation.
    CollectiveExecutor* collective_executor = nullptr;
  };
  // Runs one step on every partition; `done` gets the first error (or OK) once all have ended.
  // The calling thread runs one partition itself.
  void RunAsync(const RunArgs& args, StatusCallback done) const;

  int num_partitions() const { return static_cast<int>(partitions_.size()); }
  const std::vector<Partition>& partitions() const { return partitions_; }

 private:
  StepExecutors() = default;
  std::vector<Partition> partitions_;
};

}  // namespace weft
