// MirroredVariable: reads, cross-replica updates, and replica-context updates by aggregation.
#include "weft/distribute/mirrored_variable.h"

#include "weft/core/str_util.h"
#include "weft/distribute/cross_device_ops.h"
#include "weft/distribute/replica_context.h"
#include "weft/distribute/strategy.h"
#include "weft/graph/builder/ops/array_ops.h"

namespace weft::distribute {

StatusOr<Output> MirroredVariable::Read(const Scope& scope, ReplicaContext* context) const {
  if (context != nullptr) {
    WEFT_ASSIGN_OR_RETURN(int r, LocalComponent(*context));
    return Checked(scope, component(r).Read(scope));
  }
  Scope on_primary = scope.WithDevice(devices()[0]);
  return Checked(scope, ops::Identity(on_primary, component(0).Read(on_primary)));
}

StatusOr<Output> MirroredVariable::Update(const Scope& scope, UpdateKind kind, const Input& value,
                                          ReplicaContext* context) {
  if (context != nullptr) return UpdateInReplicaContext(scope, kind, value, *context);
  Output tensor = ToOutput(scope, value);
  std::vector<Output> updates;
  for (int i = 0; i < num_components(); ++i) updates.push_back(ApplyUpdate(scope, kind, i, tensor));
  return Checked(scope, Group(scope, updates));
}

StatusOr<Output> MirroredVariable::UpdateInReplicaContext(const Scope& scope, UpdateKind kind,
                                                          const Input& value,
                                                          ReplicaContext& context) {
  WEFT_ASSIGN_OR_RETURN(const int r, LocalComponent(context));
  const int n = num_components();
  if (n == 1) return Checked(scope, ApplyUpdate(scope, kind, r, value));
  const VariableAggregation aggregation = this->aggregation();
  WEFT_RETURN_IF_ERROR(CheckReplicaUpdate(kind, value, n));
  if (value.is_constant() && aggregation == VariableAggregation::kMean) {
    return Checked(scope, ApplyUpdate(scope, kind, r, ToOutput(scope, value)));
  }
  Output tensor = ToOutput(scope, value);
  WEFT_RETURN_IF_ERROR(scope.status().WithContext(Describe()));
  CrossDeviceOps& cross_device_ops = context.strategy().cross_device_ops();
  auto merge_fn =
      [this, kind, aggregation, &cross_device_ops](
          const Scope& cross_scope,
          const std::vector<PerReplica>& grouped) -> StatusOr<std::vector<DistributedValues>> {
    // Runs once, in cross-replica context: the combined value goes to every component.
    StatusOr<Mirrored> combined =
        aggregation == VariableAggregation::kOnlyFirstReplica
            ? cross_device_ops.Broadcast(cross_scope, grouped[0].value(0), devices())
            : cross_device_ops.Reduce(
                  cross_scope,
                  aggregation == VariableAggregation::kSum ? ReduceOp::kSum : ReduceOp::kMean,
                  grouped[0], devices());
    if (!combined.ok()) return combined.status().WithContext(Describe());
    std::vector<Output> updates;
    for (int i = 0; i < num_components(); ++i) {
      updates.push_back(ApplyUpdate(cross_scope, kind, i, combined->value(i)));
    }
    WEFT_RETURN_IF_ERROR(cross_scope.status().WithContext(Describe()));
    return std::vector<DistributedValues>{DistributedValues(std::move(updates), devices())};
  };
  WEFT_ASSIGN_OR_RETURN(std::vector<Output> mine, context.MergeCall({tensor}, merge_fn));
  if (mine.size() != 1) return Internal(Describe(), ": merge returned ", mine.size(), " values");
  return mine[0];
}

}  // namespace weft::distribute
