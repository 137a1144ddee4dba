// DistributedVariable: one resource variable per device of a strategy, used as one variable.
// Component 0 is named "<name>" and lives on devices[0]; component i > 0 is "<name>/replica_<i>"
// on devices[i]. initializer() is one op that sets component 0 from the user's initializer and
// every other component from that same initial value (so even a random initializer gives the same
// values, bitwise, on every replica).
//
// Kinds, picked by the strategy from the synchronization (section 1.4.3 of the reference notes):
//  - MirroredVariable (kAuto, kOnWrite; mirrored_variable.h): components stay identical; an
//    update in replica context is combined across replicas according to the aggregation.
//  - SyncOnReadVariable (kOnRead; sync_on_read_variable.h): each replica reads and writes its
//    own component; a cross-replica read combines them.
//  - AggregatingVariable (CentralStorageStrategy's kAuto, kOnWrite; aggregating_variable.h): one
//    component that every replica shares; updates in replica context are combined and applied
//    once.
//
// Read / Assign / AssignAdd / AssignSub take the ReplicaContext of the replica that calls them
// inside Strategy::Run, or null for cross-replica context (outside Run, or in a merge function).
// They add nodes to `scope`'s graph and return the read value or the update op (an op without
// outputs: run it as a target, or use it as a control dependency). Refusals are InvalidArgument
// naming the variable and the rule. Like Scope, not thread-safe; Strategy::Run's replicas take
// turns, so they may share one.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/distribute/reduce_op.h"
#include "weft/graph/builder/variable.h"

namespace weft::distribute {

class ReplicaContext;

enum class UpdateKind { kAssign, kAssignAdd, kAssignSub };

class DistributedVariable {
 public:
  virtual ~DistributedVariable() = default;
  DistributedVariable(const DistributedVariable&) = delete;
  DistributedVariable& operator=(const DistributedVariable&) = delete;

  // Component 0's name (the full node name, scope prefix included).
  const std::string& name() const { return components_[0].name(); }
  DataType dtype() const { return components_[0].dtype(); }
  const TensorShape& shape() const { return components_[0].shape(); }
  VariableAggregation aggregation() const { return aggregation_; }
  virtual VariableSynchronization synchronization() const = 0;

  int num_components() const { return static_cast<int>(components_.size()); }
  // Component i (checked). Component i > 0's own initializer() copies component 0's initial
  // value, so it needs component 0's initial value built in the same step: run this object's
  // initializer().
  const Variable& component(int i) const;
  const std::vector<Variable>& components() const { return components_; }
  // The component that replica `replica` of the strategy uses: component `replica` for kinds with
  // one component per replica, the one shared component for an AggregatingVariable.
  virtual const Variable& ReplicaComponent(int replica) const { return component(replica); }
  const std::vector<std::string>& devices() const { return devices_; }
  // Initializes every component (see the file comment).
  Output initializer() const { return initializer_; }

  virtual StatusOr<Output> Read(const Scope& scope, ReplicaContext* context) const = 0;
  StatusOr<Output> Assign(const Scope& scope, const Input& value, ReplicaContext* context) {
    return Update(scope, UpdateKind::kAssign, value, context);
  }
  StatusOr<Output> AssignAdd(const Scope& scope, const Input& value, ReplicaContext* context) {
    return Update(scope, UpdateKind::kAssignAdd, value, context);
  }
  StatusOr<Output> AssignSub(const Scope& scope, const Input& value, ReplicaContext* context) {
    return Update(scope, UpdateKind::kAssignSub, value, context);
  }
  virtual StatusOr<Output> Update(const Scope& scope, UpdateKind kind, const Input& value,
                                  ReplicaContext* context) = 0;

 protected:
  DistributedVariable(std::vector<Variable> components, std::vector<std::string> devices,
                      VariableAggregation aggregation, Output initializer);

  // "MirroredVariable 'dense/w'": how messages name this variable.
  std::string Describe() const;
  // The kind's name in messages; by default from synchronization().
  virtual std::string_view TypeName() const;
  // The component of `context`'s replica; InvalidArgument when the context's strategy does not
  // run one replica per component of this variable.
  StatusOr<int> LocalComponent(const ReplicaContext& context) const;
  // The refusals of an update in replica context with `replicas` replicas for a kind that keeps
  // one value for all of them: NONE aggregation (no rule to combine the replicas' values; we pick
  // tf.VariableAggregation's documented error over a silent local update) and a constant with SUM
  // (it would count `replicas` times).
  Status CheckReplicaUpdate(UpdateKind kind, const Input& value, int replicas) const;
  // The update `kind` of component i with `value`, built in `scope`.
  Output ApplyUpdate(const Scope& scope, UpdateKind kind, int i, const Input& value) const;
  // `value` as a tensor of this variable's dtype built in `scope` (constants become Consts).
  Output ToOutput(const Scope& scope, const Input& value) const;
  // One op that runs every update (a NoOp with control dependencies on them).
  Output Group(const Scope& scope, const std::vector<Output>& updates) const;
  // The scope's error, if building failed, with this variable named.
  StatusOr<Output> Checked(const Scope& scope, const Output& output) const;

 private:
  std::vector<Variable> components_;
  std::vector<std::string> devices_;
  VariableAggregation aggregation_;
  Output initializer_;
};

// "assign", "assign_add", "assign_sub".
std::string_view UpdateKindName(UpdateKind kind);

// Builds the components of a variable on `devices` and its initializer in `scope`, then the
// MirroredVariable or SyncOnReadVariable that `synchronization` asks for. InvalidArgument for no
// devices, an empty name, or MEAN aggregation of a non-float dtype; scope errors are returned.
StatusOr<std::shared_ptr<DistributedVariable>> CreateDistributedVariable(
    const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer, const std::vector<std::string>& devices,
    VariableSynchronization synchronization, VariableAggregation aggregation);

}  // namespace weft::distribute
