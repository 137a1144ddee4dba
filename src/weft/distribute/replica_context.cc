// ReplicaContext: MergeCall (through the run's coordinator, or inline for one replica) and
// AllReduce as a MergeCall over the strategy's CrossDeviceOps.
#include "weft/distribute/replica_context.h"

#include "weft/core/str_util.h"
#include "weft/distribute/strategy.h"

namespace weft::distribute {
namespace {
thread_local ReplicaContext* current_context = nullptr;
}  // namespace

ReplicaContext* CurrentReplicaContext() { return current_context; }

namespace internal {
CurrentReplicaContextGuard::CurrentReplicaContextGuard(ReplicaContext* context)
    : previous_(current_context) {
  current_context = context;
}
CurrentReplicaContextGuard::~CurrentReplicaContextGuard() { current_context = previous_; }
}  // namespace internal

ReplicaContext::ReplicaContext(const Strategy& strategy, int replica_id, Scope cross_replica_scope,
                               internal::MergeCoordinator* coordinator)
    : strategy_(strategy),
      replica_id_(replica_id),
      cross_replica_scope_(std::move(cross_replica_scope)),
      coordinator_(coordinator) {}

int ReplicaContext::num_replicas_in_sync() const { return strategy_.num_replicas_in_sync(); }

const std::string& ReplicaContext::device() const { return strategy_.devices()[replica_id_]; }

StatusOr<std::vector<Output>> ReplicaContext::MergeCall(const std::vector<Output>& values,
                                                        MergeFn merge_fn) {
  if (coordinator_ != nullptr) return coordinator_->MergeCall(replica_id_, values, merge_fn);
  if (strategy_.num_local_replicas() != 1) {
    return FailedPrecondition("MergeCall with ", strategy_.num_local_replicas(),
                              " replicas needs the ReplicaContext that Strategy::Run passes");
  }
  std::vector<PerReplica> grouped;
  for (const Output& value : values)
    grouped.emplace_back(std::vector<Output>{value}, strategy_.devices());
  WEFT_ASSIGN_OR_RETURN(std::vector<DistributedValues> merged,
                        merge_fn(cross_replica_scope_, grouped));
  std::vector<Output> mine;
  for (const DistributedValues& value : merged) {
    if (value.num_replicas() != 1) {
      return InvalidArgument("MergeCall: the merge function returned ", value.num_replicas(),
                             " components for 1 replica");
    }
    mine.push_back(value.value(0));
  }
  return mine;
}

StatusOr<Output> ReplicaContext::AllReduce(ReduceOp op, const Output& value) {
  if (!value) {
    return InvalidArgument("AllReduce of replica ", replica_id_, ": the value is empty");
  }
  const Strategy& strategy = strategy_;
  auto merge_fn = [&strategy, op](const Scope& scope, const std::vector<PerReplica>& grouped)
      -> StatusOr<std::vector<DistributedValues>> {
    WEFT_ASSIGN_OR_RETURN(Mirrored reduced, strategy.cross_device_ops().Reduce(
                                                scope, op, grouped[0], strategy.devices()));
    return std::vector<DistributedValues>{reduced};
  };
  WEFT_ASSIGN_OR_RETURN(std::vector<Output> mine, MergeCall({value}, merge_fn));
  return mine[0];
}

}  // namespace weft::distribute
