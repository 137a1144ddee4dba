// CentralStorageStrategy and its policy: variables once on the variable device, reductions onto
// it, updates there.
#include "weft/distribute/central_storage_strategy.h"

#include "weft/core/str_util.h"
#include "weft/distribute/aggregating_variable.h"
#include "weft/framework/device_name_utils.h"

namespace weft::distribute {
namespace {

class CentralStorageExtended final : public StrategyExtended {
 public:
  explicit CentralStorageExtended(const CentralStorageStrategy& strategy) : strategy_(strategy) {}

  StatusOr<std::shared_ptr<DistributedVariable>> CreateVariable(
      const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
      const Initializer& initializer, VariableSynchronization synchronization,
      VariableAggregation aggregation) const override {
    if (synchronization == VariableSynchronization::kOnRead) {
      return CreateDistributedVariable(scope, name, shape, dtype, initializer, strategy_.devices(),
                                       synchronization, aggregation);
    }
    return CreateAggregatingVariable(scope, name, shape, dtype, initializer,
                                     strategy_.variable_device(), aggregation);
  }

  StatusOr<std::shared_ptr<DistributedVariable>> CreateColocatedVariable(
      const Scope& scope, const DistributedVariable& primary, std::string_view name,
      const TensorShape& shape, DataType dtype, const Initializer& initializer) const override {
    if (primary.synchronization() == VariableSynchronization::kOnRead) {
      return CreateDistributedVariable(scope, name, shape, dtype, initializer, primary.devices(),
                                       VariableSynchronization::kOnRead,
                                       VariableAggregation::kNone);
    }
    return CreateAggregatingVariable(scope, name, shape, dtype, initializer, primary.devices()[0],
                                     VariableAggregation::kNone);
  }

  StatusOr<std::vector<Mirrored>> BatchReduceTo(
      const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
      const std::vector<std::vector<std::string>>& destinations) const override {
    return BatchReduceByDestination(strategy_.cross_device_ops(), scope, op, values, destinations);
  }

  StatusOr<std::vector<Output>> Update(const Scope& scope, const DistributedVariable& variable,
                                       const std::vector<Mirrored>& args,
                                       const UpdateFn& fn) const override {
    return UpdateEachComponent(scope, variable, args, fn);
  }

  void ConfigureSession(SessionOptions* options) const override {
    // The variable device may lie beyond the compute devices ("/cpu:2" for replicas on 0 and 1).
    StatusOr<ParsedDeviceName> parsed = ParseDeviceName(strategy_.variable_device());
    if (!parsed.ok() || !parsed->has_id) return;
    auto& count = (*options->config.mutable_device_count())[parsed->type];
    count = std::max<int32_t>(count, parsed->id + 1);
  }
  StatusOr<Output> SynchronizeInitialValues(
      const Scope&, const std::vector<std::shared_ptr<DistributedVariable>>&) const override {
    return Output();
  }
  bool ShouldCheckpoint() const override { return true; }

 private:
  const CentralStorageStrategy& strategy_;
};

}  // namespace

StatusOr<std::unique_ptr<CentralStorageStrategy>> CentralStorageStrategy::Create(
    const std::vector<std::string>& compute_devices, const std::string& variable_device) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> devices, CanonicalDevices(compute_devices));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> storage, CanonicalDevices({variable_device}));
  return std::unique_ptr<CentralStorageStrategy>(
      new CentralStorageStrategy(std::move(devices), std::move(storage[0])));
}

CentralStorageStrategy::CentralStorageStrategy(std::vector<std::string> compute_devices,
                                               std::string variable_device)
    : Strategy(std::move(compute_devices),
               std::make_unique<ReductionToOneDevice>(
                   ReductionToOneDeviceOptions{.reduce_to_device = variable_device})),
      variable_device_(std::move(variable_device)) {
  set_extended(std::make_unique<CentralStorageExtended>(*this));
}

}  // namespace weft::distribute
