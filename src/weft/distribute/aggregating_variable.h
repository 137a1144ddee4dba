// AggregatingVariable: a DistributedVariable (synchronization kOnWrite) with a single component,
// stored once on one device (the host's CPU under CentralStorageStrategy) and shared by every
// replica, as the reference's AggregatingVariable.
//
// Reads: every replica reads the one component (the read runs where the variable lives; the
// session moves the value to the replica's device); in cross-replica context, an Identity of it.
// Updates:
//  - cross-replica context, or one replica in sync: the component gets the value.
//  - replica context with several replicas, by aggregation (every replica must make the call;
//    they meet in one MergeCall and the component is updated once):
//      NONE: refused, as for MirroredVariable.
//      SUM / MEAN: a tensor is reduced onto the variable's device; a constant is applied as it is
//        with MEAN (the mean of n equal values) and refused with SUM.
//      ONLY_FIRST_REPLICA: replica 0's value.
#pragma once

#include "weft/distribute/distributed_variable.h"

namespace weft::distribute {

class AggregatingVariable final : public DistributedVariable {
 public:
  AggregatingVariable(Variable component, std::string device, VariableAggregation aggregation)
      : DistributedVariable({component}, {std::move(device)}, aggregation,
                            component.initializer()) {}

  VariableSynchronization synchronization() const override {
    return VariableSynchronization::kOnWrite;
  }
  const Variable& ReplicaComponent(int) const override { return component(0); }
  StatusOr<Output> Read(const Scope& scope, ReplicaContext* context) const override;
  StatusOr<Output> Update(const Scope& scope, UpdateKind kind, const Input& value,
                          ReplicaContext* context) override;

 protected:
  std::string_view TypeName() const override { return "AggregatingVariable"; }

 private:
  StatusOr<Output> UpdateInReplicaContext(const Scope& scope, UpdateKind kind, const Input& value,
                                          ReplicaContext& context);
};

// A variable of one component on `device`, for a strategy's CreateVariable (made directly:
// inside the strategy's own scope, Variable::Create would ask the strategy again). Errors name it.
StatusOr<std::shared_ptr<DistributedVariable>> CreateAggregatingVariable(
    const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer, const std::string& device, VariableAggregation aggregation);

}  // namespace weft::distribute
