#include "weft/runtime/step_executors.h"

#include <map>
#include <set>

#include "weft/core/mutex.h"
#include "weft/framework/collective.h"
#include "weft/graph/fuse_ops.h"
#include "weft/graph/graph_def_io.h"
#include "weft/graph/memory_types.h"
#include "weft/graph/partition.h"
#include "weft/graph/placer.h"
#include "weft/runtime/local_rendezvous.h"

namespace weft {
namespace {

// What the partitions of one running step share.
struct StepState {
  LocalRendezvous local_rendezvous;
  Rendezvous* rendezvous = &local_rendezvous;  // or the caller's
  CollectiveExecutor* collectives = nullptr;   // the caller's
  CancellationManager* cancellation_manager = nullptr;
  StatusCallback done;

  Mutex mu;
  int remaining WEFT_GUARDED_BY(mu) = 0;
  Status status WEFT_GUARDED_BY(mu);  // the first error

  // `remaining` counts the partitions still running plus the aborts in flight: `done` runs when it
  // reaches zero, and the caller may then destroy the rendezvous and collectives it lent the step,
  // so whatever still touches them holds a count.
  bool TryHold() {
    MutexLock lock(mu);
    if (remaining == 0) return false;
    ++remaining;
    return true;
  }

  void Release() {
    Status final_status;
    {
      MutexLock lock(mu);
      if (--remaining != 0) return;
      final_status = status;
    }
    done(final_status);
  }

  void PartitionDone(const Status& partition_status) {
    bool first_error = false;
    if (!partition_status.ok()) {
      MutexLock lock(mu);
      first_error = status.ok();
      // A partition that failed because another one cancelled the step reports Cancelled or
      // Aborted; the cause, when it arrives later, is the better answer.
      if (status.ok() || (IsDerivedError(status) && !IsDerivedError(partition_status))) {
        status = partition_status;
      }
    }
    if (first_error) {
      // Wake whatever the other partitions wait on: a Recv, a collective, a cancellable kernel.
      // This partition's count is still held, so the step cannot end underneath.
      rendezvous->StartAbort(partition_status);
      collectives->StartAbort(partition_status);
      cancellation_manager->StartCancel();
    }
    Release();
  }
};

StatusOr<std::unique_ptr<Executor>> NewExecutor(Device* device, const KernelRegistry& kernels,
                                                std::unique_ptr<Graph> graph) {
  ExecutorParams params;
  params.device = device;
  params.kernels = &kernels;
  return Executor::Create(params, std::move(graph));
}

}  // namespace

StatusOr<std::unique_ptr<StepExecutors>> StepExecutors::Create(std::unique_ptr<Graph> step_graph,
                                                               const DeviceMgr& devices,
                                                               const KernelRegistry& kernels,
                                                               const proto::ConfigProto& config) {
  std::vector<DeviceDescription> descriptions;
  for (Device* device : devices.ListDevices()) {
    descriptions.push_back({device->name(), device->device_type()});
  }
  PlacerOptions placer_options;
  placer_options.allow_soft_placement = config.allow_soft_placement();
  placer_options.log_device_placement = config.log_device_placement();
  Placer placer(step_graph.get(), std::move(descriptions), /*default_device=*/0, &kernels,
                placer_options);
  WEFT_RETURN_IF_ERROR(placer.Run());

  std::set<std::string> used;
  for (Node* node : step_graph->nodes()) used.insert(node->assigned_device_name());

  if (used.size() <= 1) {
    // One device: no partitioning, no _Send/_Recv (unless the device has memory of its own); the
    // whole step is its one partition.
    WEFT_ASSIGN_OR_RETURN(
        Device * device,
        devices.LookupDevice(used.empty() ? devices.ListDevices()[0]->name() : *used.begin()));
    return CreateFromPartitions({{device->name(), step_graph->ToGraphDef()}}, devices,
                                step_graph->op_registry(), kernels);
  }

  PartitionOptions partition_options;
  partition_options.get_incarnation = [&devices](const std::string& name) -> uint64_t {
    StatusOr<Device*> device = devices.LookupDevice(name);
    return device.ok() ? (*device)->incarnation() : 0;
  };
  std::map<std::string, proto::GraphDef> partitions;
  WEFT_RETURN_IF_ERROR(::weft::Partition(partition_options, *step_graph, &partitions));
  return CreateFromPartitions(partitions, devices, step_graph->op_registry(), kernels);
}

StatusOr<std::unique_ptr<StepExecutors>> StepExecutors::CreateFromPartitions(
    const std::map<std::string, proto::GraphDef>& partitions, const DeviceMgr& devices,
    const OpRegistry& ops, const KernelRegistry& kernels) {
  if (partitions.empty()) return InvalidArgument("a step needs at least one partition");
  auto executors = std::unique_ptr<StepExecutors>(new StepExecutors());
  for (const auto& [device_name, graph_def] : partitions) {
    WEFT_ASSIGN_OR_RETURN(Device * device, devices.LookupDevice(device_name));
    auto graph = std::make_unique<Graph>(ops);
    proto::GraphDef rewritten = graph_def;
    FuseOps(kernels, device->device_type(), &rewritten);
    if (!device->HasHostMemory()) {
      WEFT_RETURN_IF_ERROR(
          EnsureMemoryTypes(ops, device->name(), device->incarnation(), &rewritten));
    }
    WEFT_RETURN_IF_ERROR(ImportGraphDef(rewritten, graph.get()));
    for (Node* node : graph->nodes()) node->set_assigned_device_name(device->name());
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                          NewExecutor(device, kernels, std::move(graph)));
    executors->partitions_.push_back({device, std::move(executor)});
  }
  return executors;
}

void StepExecutors::RunAsync(const RunArgs& args, StatusCallback done) const {
  WEFT_CHECK(args.collective_executor != nullptr) << "a step needs a collective executor";
  auto state = std::make_shared<StepState>();
  state->cancellation_manager = args.cancellation_manager;
  state->collectives = args.collective_executor;
  {
    MutexLock lock(state->mu);  // not shared yet; the lock only tells the analysis so
    state->remaining = num_partitions();
  }
  if (args.rendezvous != nullptr) state->rendezvous = args.rendezvous;
  // Collectives do not watch the cancellation themselves: a cancelled step (a timeout, another
  // partition's error) must still wake members waiting for peers that will never come.
  CancellationManager* cancellation = args.cancellation_manager;
  const CancellationManager::Token token = cancellation->NewToken();
  // A weak reference: the callback may run while the step is ending and its state going away.
  const bool registered =
      cancellation->RegisterCallback(token, [weak = std::weak_ptr<StepState>(state)] {
        auto alive = weak.lock();
        if (alive == nullptr || !alive->TryHold()) return;
        alive->collectives->StartAbort(Cancelled("the step was cancelled"));
        alive->Release();
      });
  if (!registered) state->collectives->StartAbort(Cancelled("the step was cancelled"));
  state->done = [cancellation, token, registered, done = std::move(done)](const Status& status) {
    if (registered) cancellation->DeregisterCallback(token);
    done(status);
  };

  Executor::Args executor_args;
  executor_args.step_id = args.step_id;
  executor_args.call_frame = args.call_frame;
  executor_args.cancellation_manager = args.cancellation_manager;
  executor_args.runner = args.runner;
  executor_args.stats = args.stats;
  executor_args.rendezvous = state->rendezvous;
  executor_args.collective_executor = state->collectives;
  // Every partition but the last starts on the inter-op threads: RunAsync may run a good part of
  // its step inline, and the partitions must make progress together.
  for (int i = 0; i < num_partitions(); ++i) {
    const Executor* executor = partitions_[i].executor.get();
    auto start = [executor, executor_args, state] {
      executor->RunAsync(executor_args,
                         [state](const Status& status) { state->PartitionDone(status); });
    };
    if (i + 1 < num_partitions()) {
      args.runner(std::move(start));
    } else {
      start();
    }
  }
}

}  // namespace weft
