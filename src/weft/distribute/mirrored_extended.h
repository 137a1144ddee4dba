// MirroredExtended: the policy of OneDeviceStrategy and MirroredStrategy (MultiWorkerMirrored's
// policy holds one and adds what several processes need): a variable has one component per replica
// device
// (MirroredVariable, or SyncOnReadVariable for kOnRead), values are reduced with the strategy's
// CrossDeviceOps onto every replica's device, and each replica's component is updated on its own
// device with the reduced value, so the components stay bitwise equal. Not thread-safe.
#pragma once

#include "weft/distribute/strategy_extended.h"

namespace weft::distribute {

class Strategy;

class MirroredExtended final : public StrategyExtended {
 public:
  // `strategy` owns this object.
  explicit MirroredExtended(const Strategy& strategy) : strategy_(strategy) {}

  StatusOr<std::shared_ptr<DistributedVariable>> CreateVariable(
      const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
      const Initializer& initializer, VariableSynchronization synchronization,
      VariableAggregation aggregation) const override;
  StatusOr<std::shared_ptr<DistributedVariable>> CreateColocatedVariable(
      const Scope& scope, const DistributedVariable& primary, std::string_view name,
      const TensorShape& shape, DataType dtype, const Initializer& initializer) const override;
  StatusOr<std::vector<Mirrored>> BatchReduceTo(
      const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
      const std::vector<std::vector<std::string>>& destinations) const override;
  StatusOr<std::vector<Output>> Update(const Scope& scope, const DistributedVariable& variable,
                                       const std::vector<Mirrored>& args,
                                       const UpdateFn& fn) const override {
    return UpdateEachComponent(scope, variable, args, fn);
  }
  void ConfigureSession(SessionOptions*) const override {}
  StatusOr<Output> SynchronizeInitialValues(
      const Scope&, const std::vector<std::shared_ptr<DistributedVariable>>&) const override {
    return Output();
  }
  bool ShouldCheckpoint() const override { return true; }
  std::vector<Output> TakeCollectiveOrdering() const override;
  void SetCollectiveOrdering(std::vector<Output> chain) const override;

 private:
  const Strategy& strategy_;
};

}  // namespace weft::distribute
