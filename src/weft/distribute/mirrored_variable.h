// MirroredVariable: a DistributedVariable (synchronization kAuto / kOnWrite) whose components are
// kept identical by synchronising every write.
//
// Reads: in replica context, the replica's own component; in cross-replica context, an Identity
// of component 0 (a copy, so the result cannot alias the variable).
//
// Updates (assign, assign_add, assign_sub):
//  - cross-replica context: every component gets the value (the aggregation plays no part).
//  - replica context with one replica: the component gets the value.
//  - replica context with several replicas, by aggregation:
//      NONE: refused. We pick the documented rule of tf.VariableAggregation ("giving an error if
//        you use a variable-update operation with multiple replicas") over TF 2.x's silent
//        local-only update, which lets components drift apart.
//      SUM / MEAN: a tensor value is reduced across replicas (MergeCall + the strategy's
//        CrossDeviceOps) and every component gets the reduced value; the op returned to replica r
//        updates component r. A constant (C++ literal or Tensor) is applied unreduced with MEAN
//        (each replica updates its own component: assign_add(1.0) adds 1 everywhere) and refused
//        with SUM (summing n identical constants is almost never meant).
//      ONLY_FIRST_REPLICA: replica 0's value is broadcast and every component gets it.
//    Every replica must make the same call (they meet in one MergeCall).
#pragma once

#include "weft/distribute/distributed_variable.h"

namespace weft::distribute {

class MirroredVariable final : public DistributedVariable {
 public:
  // Made by CreateDistributedVariable.
  MirroredVariable(std::vector<Variable> components, std::vector<std::string> devices,
                   VariableAggregation aggregation, Output initializer)
      : DistributedVariable(std::move(components), std::move(devices), aggregation, initializer) {}

  VariableSynchronization synchronization() const override {
    return VariableSynchronization::kOnWrite;
  }
  StatusOr<Output> Read(const Scope& scope, ReplicaContext* context) const override;
  StatusOr<Output> Update(const Scope& scope, UpdateKind kind, const Input& value,
                          ReplicaContext* context) override;

 private:
  StatusOr<Output> UpdateInReplicaContext(const Scope& scope, UpdateKind kind, const Input& value,
                                          ReplicaContext& context);
};

}  // namespace weft::distribute
