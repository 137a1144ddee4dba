// MirroredExtended: variables with a component per replica, reduced onto every replica.
#include "weft/distribute/mirrored_extended.h"

#include "weft/distribute/strategy.h"

namespace weft::distribute {

StatusOr<std::shared_ptr<DistributedVariable>> MirroredExtended::CreateVariable(
    const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer, VariableSynchronization synchronization,
    VariableAggregation aggregation) const {
  return CreateDistributedVariable(scope, name, shape, dtype, initializer, strategy_.devices(),
                                   synchronization, aggregation);
}

StatusOr<std::shared_ptr<DistributedVariable>> MirroredExtended::CreateColocatedVariable(
    const Scope& scope, const DistributedVariable& primary, std::string_view name,
    const TensorShape& shape, DataType dtype, const Initializer& initializer) const {
  return CreateDistributedVariable(scope, name, shape, dtype, initializer, primary.devices(),
                                   primary.synchronization(), VariableAggregation::kNone);
}

StatusOr<std::vector<Mirrored>> MirroredExtended::BatchReduceTo(
    const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
    const std::vector<std::vector<std::string>>& destinations) const {
  return BatchReduceByDestination(strategy_.cross_device_ops(), scope, op, values, destinations);
}

std::vector<Output> MirroredExtended::TakeCollectiveOrdering() const {
  return strategy_.cross_device_ops().TakeOrdering();
}

void MirroredExtended::SetCollectiveOrdering(std::vector<Output> chain) const {
  strategy_.cross_device_ops().SetOrdering(std::move(chain));
}

}  // namespace weft::distribute
