// AggregatingVariable: shared reads, and replica-context updates merged into one.
#include "weft/distribute/aggregating_variable.h"

#include "weft/core/str_util.h"
#include "weft/distribute/cross_device_ops.h"
#include "weft/distribute/replica_context.h"
#include "weft/distribute/strategy.h"
#include "weft/graph/builder/ops/array_ops.h"

namespace weft::distribute {

StatusOr<Output> AggregatingVariable::Read(const Scope& scope, ReplicaContext* context) const {
  Scope on_variable = scope.WithDevice(devices()[0]);
  if (context != nullptr) return Checked(scope, component(0).Read(on_variable));
  return Checked(scope, ops::Identity(on_variable, component(0).Read(on_variable)));
}

StatusOr<Output> AggregatingVariable::Update(const Scope& scope, UpdateKind kind,
                                             const Input& value, ReplicaContext* context) {
  Scope on_variable = scope.WithDevice(devices()[0]);
  if (context == nullptr || context->num_replicas_in_sync() == 1) {
    return Checked(scope, ApplyUpdate(on_variable, kind, 0, ToOutput(scope, value)));
  }
  return UpdateInReplicaContext(scope, kind, value, *context);
}

StatusOr<Output> AggregatingVariable::UpdateInReplicaContext(const Scope& scope, UpdateKind kind,
                                                             const Input& value,
                                                             ReplicaContext& context) {
  const int n = context.num_replicas_in_sync();
  const VariableAggregation aggregation = this->aggregation();
  WEFT_RETURN_IF_ERROR(CheckReplicaUpdate(kind, value, n));
  Output tensor = ToOutput(scope, value);
  WEFT_RETURN_IF_ERROR(scope.status().WithContext(Describe()));
  const bool as_is = value.is_constant() || aggregation == VariableAggregation::kOnlyFirstReplica;
  CrossDeviceOps& cross_device_ops = context.strategy().cross_device_ops();
  auto merge_fn =
      [this, kind, aggregation, as_is, &cross_device_ops](
          const Scope& cross_scope,
          const std::vector<PerReplica>& grouped) -> StatusOr<std::vector<DistributedValues>> {
    // Runs once, in cross-replica context: the one component gets the combined value.
    Output combined = grouped[0].value(0);
    if (!as_is) {
      StatusOr<Mirrored> reduced = cross_device_ops.Reduce(
          cross_scope, aggregation == VariableAggregation::kSum ? ReduceOp::kSum : ReduceOp::kMean,
          grouped[0], devices());
      if (!reduced.ok()) return reduced.status().WithContext(Describe());
      combined = reduced->primary();
    }
    Output update = ApplyUpdate(cross_scope.WithDevice(devices()[0]), kind, 0, combined);
    WEFT_RETURN_IF_ERROR(cross_scope.status().WithContext(Describe()));
    // Every replica's op is the one update.
    const int replicas = grouped[0].num_replicas();
    return std::vector<DistributedValues>{DistributedValues(
        std::vector<Output>(replicas, update), std::vector<std::string>(replicas, devices()[0]))};
  };
  WEFT_ASSIGN_OR_RETURN(std::vector<Output> mine, context.MergeCall({tensor}, merge_fn));
  if (mine.size() != 1) return Internal(Describe(), ": merge returned ", mine.size(), " values");
  return mine[0];
}

StatusOr<std::shared_ptr<DistributedVariable>> CreateAggregatingVariable(
    const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer, const std::string& device, VariableAggregation aggregation) {
  if (name.empty()) return InvalidArgument("a distributed variable needs a name");
  WEFT_RETURN_IF_ERROR(scope.status());
  Variable component =
      Variable::CreateDirectly(scope.WithDevice(device), name, shape, dtype, initializer);
  if (!component) return scope.status().WithContext(StrCat("variable '", name, "'"));
  return std::shared_ptr<DistributedVariable>(
      std::make_shared<AggregatingVariable>(component, device, aggregation));
}

}  // namespace weft::distribute
