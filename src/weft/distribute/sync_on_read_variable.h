// SyncOnReadVariable: a DistributedVariable (synchronization kOnRead) whose components are
// written independently by their replicas and combined only when read in cross-replica context —
// the shape of a metric's running totals.
//
// Replica context: Read and every update touch only the replica's own component.
// Cross-replica context, by aggregation:
//  - Read: SUM / MEAN reduce the components (on devices[0]); ONLY_FIRST_REPLICA reads component 0;
//    NONE with several components is refused (there is no rule to combine them).
//  - assign(x): SUM gives each component x / n so that the sum is x (integer dtypes truncate);
//    the others give each component x.
//  - assign_add / assign_sub: refused with SUM (adding x to every component would add n * x to
//    the sum); the others apply x to every component.
#pragma once

#include "weft/distribute/distributed_variable.h"

namespace weft::distribute {

class SyncOnReadVariable final : public DistributedVariable {
 public:
  // Made by CreateDistributedVariable.
  SyncOnReadVariable(std::vector<Variable> components, std::vector<std::string> devices,
                     VariableAggregation aggregation, Output initializer)
      : DistributedVariable(std::move(components), std::move(devices), aggregation, initializer) {}

  VariableSynchronization synchronization() const override {
    return VariableSynchronization::kOnRead;
  }
  StatusOr<Output> Read(const Scope& scope, ReplicaContext* context) const override;
  StatusOr<Output> Update(const Scope& scope, UpdateKind kind, const Input& value,
                          ReplicaContext* context) override;
};

}  // namespace weft::distribute
