// DistributedVariable's shared parts and CreateDistributedVariable: components, names, and the
// initializer that copies component 0's initial value to every other component.
#include "weft/distribute/distributed_variable.h"

#include "weft/core/str_util.h"
#include "weft/distribute/mirrored_variable.h"
#include "weft/distribute/replica_context.h"
#include "weft/distribute/strategy.h"
#include "weft/distribute/sync_on_read_variable.h"
#include "weft/graph/builder/ops/array_ops.h"
#include "weft/graph/builder/ops/math_ops.h"

namespace weft::distribute {
namespace {

bool IsFloating(DataType dtype) { return dtype == DataType::kFloat || dtype == DataType::kDouble; }

// The variable's name relative to its scope after the scope made it unique ("w" or "w_1"), as
// Variable::Create names its initializer.
std::string RelativeName(std::string_view requested, const std::string& actual) {
  if (actual.size() >= requested.size() &&
      actual.compare(actual.size() - requested.size(), requested.size(), requested) == 0) {
    return std::string(requested);
  }
  return StrCat(requested, actual.substr(actual.rfind('_')));
}

}  // namespace

std::string_view UpdateKindName(UpdateKind kind) {
  switch (kind) {
    case UpdateKind::kAssign:
      return "assign";
    case UpdateKind::kAssignAdd:
      return "assign_add";
    case UpdateKind::kAssignSub:
      return "assign_sub";
  }
  return "update";
}

DistributedVariable::DistributedVariable(std::vector<Variable> components,
                                         std::vector<std::string> devices,
                                         VariableAggregation aggregation, Output initializer)
    : components_(std::move(components)),
      devices_(std::move(devices)),
      aggregation_(aggregation),
      initializer_(initializer) {
  WEFT_CHECK(!components_.empty() && components_.size() == devices_.size());
}

const Variable& DistributedVariable::component(int i) const {
  WEFT_CHECK(i >= 0 && i < num_components()) << "component " << i << " of " << num_components();
  return components_[i];
}

std::string_view DistributedVariable::TypeName() const {
  return synchronization() == VariableSynchronization::kOnRead ? "SyncOnReadVariable"
                                                               : "MirroredVariable";
}

std::string DistributedVariable::Describe() const { return StrCat(TypeName(), " '", name(), "'"); }

StatusOr<int> DistributedVariable::LocalComponent(const ReplicaContext& context) const {
  const Strategy& strategy = context.strategy();
  if (!SameDevices(strategy.devices(), devices_)) {
    return InvalidArgument(Describe(), " lives on [", StrJoin(devices_, ", "),
                           "] but the replica context's strategy runs on [",
                           StrJoin(strategy.devices(), ", "), "]");
  }
  return context.replica_id();
}

Status DistributedVariable::CheckReplicaUpdate(UpdateKind kind, const Input& value,
                                               int replicas) const {
  if (aggregation_ == VariableAggregation::kNone) {
    return InvalidArgument(Describe(), ": ", UpdateKindName(kind), " in replica context with ",
                           replicas,
                           " replicas needs an aggregation method (SUM, MEAN or "
                           "ONLY_FIRST_REPLICA); the variable has NONE");
  }
  if (value.is_constant() && aggregation_ == VariableAggregation::kSum) {
    return InvalidArgument(Describe(), ": ", UpdateKindName(kind),
                           " of a constant in replica context with SUM aggregation across ",
                           replicas, " replicas is refused (the constant would count ", replicas,
                           " times); pass a tensor, or use MEAN or ONLY_FIRST_REPLICA");
  }
  return Status::OK();
}

Output DistributedVariable::ToOutput(const Scope& scope, const Input& value) const {
  if (!value.is_constant()) return value.output();
  Output constant = ops::Const(scope, value);
  if (value.is_literal() && constant && constant.dtype() != dtype()) {
    return ops::Cast(scope, constant, dtype());
  }
  return constant;
}

Output DistributedVariable::ApplyUpdate(const Scope& scope, UpdateKind kind, int i,
                                        const Input& value) const {
  const Variable& variable = components_[i];
  switch (kind) {
    case UpdateKind::kAssign:
      return variable.Assign(scope, value);
    case UpdateKind::kAssignAdd:
      return variable.AssignAdd(scope, value);
    case UpdateKind::kAssignSub:
      return variable.AssignSub(scope, value);
  }
  return Output();
}

Output DistributedVariable::Group(const Scope& scope, const std::vector<Output>& updates) const {
  return ops::NoOp(scope.WithControlDependencies(updates));
}

StatusOr<Output> DistributedVariable::Checked(const Scope& scope, const Output& output) const {
  if (!scope.ok()) return scope.status().WithContext(Describe());
  if (!output) return Internal(Describe(), ": building an op failed without an error");
  return output;
}

StatusOr<std::shared_ptr<DistributedVariable>> CreateDistributedVariable(
    const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer, const std::vector<std::string>& devices,
    VariableSynchronization synchronization, VariableAggregation aggregation) {
  if (devices.empty()) return InvalidArgument("variable '", name, "': no devices to place it on");
  if (name.empty()) return InvalidArgument("a distributed variable needs a name");
  if (aggregation == VariableAggregation::kMean && !IsFloating(dtype)) {
    return InvalidArgument("variable '", name,
                           "': MEAN aggregation needs a float32 or float64 variable, not ",
                           DataTypeName(dtype));
  }
  WEFT_RETURN_IF_ERROR(scope.status());
  std::vector<Variable> components;
  // Directly: inside the strategy's own scope, Variable::Create would ask the strategy again.
  Variable primary =
      Variable::CreateDirectly(scope.WithDevice(devices[0]), name, shape, dtype, initializer);
  if (!primary) return scope.status().WithContext(StrCat("variable '", name, "'"));
  components.push_back(primary);
  const std::string relative = RelativeName(name, primary.name());
  // Replicas i > 0 start from the primary's initial value, the input of its AssignVariableOp.
  const Edge* initial_edge = primary.initializer().node()->input_edge(1);
  WEFT_CHECK(initial_edge != nullptr);
  Output initial_value(initial_edge->src, initial_edge->src_output);
  std::vector<Output> assigns = {primary.initializer()};
  for (size_t i = 1; i < devices.size(); ++i) {
    Scope on_device = scope.WithDevice(devices[i]);
    const std::string component_name = StrCat(relative, "/replica_", i);
    Output copy =
        ops::Identity(on_device.WithOpName(StrCat(component_name, "/InitialValue")), initial_value);
    Variable replica = Variable::CreateFromValue(on_device, component_name, copy);
    if (!replica) return scope.status().WithContext(StrCat("variable '", name, "'"));
    assigns.push_back(replica.initializer());
    components.push_back(replica);
  }
  Output init = ops::NoOp(scope.WithDevice(devices[0])
                              .WithOpName(StrCat(relative, "/DistributedInitializer"))
                              .WithControlDependencies(assigns));
  if (!scope.ok()) return scope.status().WithContext(StrCat("variable '", name, "'"));
  if (synchronization == VariableSynchronization::kOnRead) {
    return std::shared_ptr<DistributedVariable>(
        new SyncOnReadVariable(std::move(components), devices, aggregation, init));
  }
  return std::shared_ptr<DistributedVariable>(
      new MirroredVariable(std::move(components), devices, aggregation, init));
}

}  // namespace weft::distribute
