// GraphMgr: the graphs registered in one WorkerSession. Registering checks a master's partitions
// (devices of this worker, _Arg/_Retval indices within the feeds and fetches) and builds one
// executor per device; ExecuteAsync runs a registered graph for one step with the step's
// rendezvous, collective executor and cancellation. Thread-safe; a graph deregistered while a step
// runs it lives until that step ends.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/distributed/worker/worker_interface.h"
#include "weft/framework/cancellation.h"
#include "weft/framework/collective.h"
#include "weft/framework/kernel_registry.h"
#include "weft/framework/op_registry.h"
#include "weft/framework/rendezvous.h"
#include "weft/runtime/device_mgr.h"
#include "weft/runtime/executor/executor.h"
#include "weft/runtime/step_executors.h"

namespace weft {

class GraphMgr {
 public:
  // `devices` are shared with every registered graph, so executors never outlive their devices
  // (a step may end after its session is gone). `ops` and `kernels` are not owned and outlive
  // everything. `task_name` is for messages.
  GraphMgr(std::string task_name, std::shared_ptr<const DeviceMgr> devices, const OpRegistry* ops,
           const KernelRegistry* kernels);
  GraphMgr(const GraphMgr&) = delete;
  GraphMgr& operator=(const GraphMgr&) = delete;

  // Returns the new graph's handle. InvalidArgument naming the device, node or index at fault.
  StatusOr<std::string> Register(const proto::RegisterGraphRequest& request);
  // Aborted when the handle is unknown (the worker may have restarted).
  Status Deregister(const std::string& graph_handle);
  // Whether the graph _Sends to another task (step_cleanup.h); true for an unknown handle.
  bool SendsToOtherTasks(const std::string& graph_handle);

  struct StepArgs {
    int64_t step_id = 0;
    Rendezvous* rendezvous = nullptr;                     // the step's; required
    CollectiveExecutor* collective_executor = nullptr;    // the step's; required
    CancellationManager* cancellation_manager = nullptr;  // the step's; required
    Executor::Runner runner;                              // required
    // Set in a traced step: every node's stats go there, and response->step_stats() gets all
    // the collector holds (the step's RecvTensor calls included) once the step succeeded.
    StepStatsCollector* stats = nullptr;
  };
  // Runs the graph of `request.graph_handle()` with `request.send()` as its feeds and fills
  // `response` with its fetches; `done` gets the step's first root-cause error. The arguments
  // must outlive `done`. The calling thread runs part of the step.
  void ExecuteAsync(const StepArgs& args, const proto::RunGraphRequest& request,
                    proto::RunGraphResponse* response, StatusCallback done);

 private:
  struct Item {
    std::shared_ptr<const DeviceMgr> devices;  // destroyed after the executors
    std::vector<std::string> feeds;
    std::vector<std::string> fetches;
    bool sends_to_other_tasks = true;
    std::unique_ptr<StepExecutors> executors;
  };

  Status CheckPartition(const proto::DevicePartition& partition, int num_feeds,
                        int num_fetches) const;
  StatusOr<std::shared_ptr<const Item>> Lookup(const std::string& graph_handle);

  const std::string task_name_;
  const std::shared_ptr<const DeviceMgr> devices_;
  const OpRegistry* const ops_;
  const KernelRegistry* const kernels_;
  Mutex mu_;
  uint64_t next_handle_ WEFT_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<const Item>> items_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft
