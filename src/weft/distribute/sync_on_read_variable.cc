// SyncOnReadVariable: local replica-context reads and updates; cross-replica reads that combine
// and updates that split (SUM) or copy the value.
#include "weft/distribute/sync_on_read_variable.h"

#include "weft/distribute/cross_device_ops.h"
#include "weft/distribute/replica_context.h"
#include "weft/graph/builder/ops/array_ops.h"
#include "weft/graph/builder/ops/math_ops.h"

namespace weft::distribute {

StatusOr<Output> SyncOnReadVariable::Read(const Scope& scope, ReplicaContext* context) const {
  if (context != nullptr) {
    WEFT_ASSIGN_OR_RETURN(const int r, LocalComponent(*context));
    return Checked(scope, component(r).Read(scope));
  }
  const int n = num_components();
  Scope on_primary = scope.WithDevice(devices()[0]);
  if (n == 1 || aggregation() == VariableAggregation::kOnlyFirstReplica) {
    return Checked(scope, ops::Identity(on_primary, component(0).Read(on_primary)));
  }
  if (aggregation() == VariableAggregation::kNone) {
    return InvalidArgument(Describe(), ": a read in cross-replica context combines the ", n,
                           " components, which needs an aggregation (SUM, MEAN or "
                           "ONLY_FIRST_REPLICA); the variable has NONE");
  }
  std::vector<Output> reads;
  for (int i = 0; i < n; ++i) reads.push_back(component(i).Read(scope));
  WEFT_RETURN_IF_ERROR(scope.status().WithContext(Describe()));
  ReductionToOneDevice reduction;
  WEFT_ASSIGN_OR_RETURN(
      Mirrored combined,
      reduction.Reduce(
          scope, aggregation() == VariableAggregation::kSum ? ReduceOp::kSum : ReduceOp::kMean,
          PerReplica(std::move(reads), devices()), {devices()[0]}));
  return combined.primary();
}

StatusOr<Output> SyncOnReadVariable::Update(const Scope& scope, UpdateKind kind, const Input& value,
                                            ReplicaContext* context) {
  if (context != nullptr) {
    WEFT_ASSIGN_OR_RETURN(const int r, LocalComponent(*context));
    return Checked(scope, ApplyUpdate(scope, kind, r, value));
  }
  const int n = num_components();
  const bool sum = aggregation() == VariableAggregation::kSum && n > 1;
  if (sum && kind != UpdateKind::kAssign) {
    return InvalidArgument(Describe(), ": ", UpdateKindName(kind),
                           " in cross-replica context is refused with SUM aggregation (it would "
                           "change the sum by ",
                           n, " times the value); use assign");
  }
  Output tensor = ToOutput(scope, value);
  if (sum) tensor = ops::Div(scope, tensor, static_cast<double>(n));
  std::vector<Output> updates;
  for (int i = 0; i < n; ++i) updates.push_back(ApplyUpdate(scope, kind, i, tensor));
  return Checked(scope, Group(scope, updates));
}

}  // namespace weft::distribute
