// UpdateEachComponent: the update of a variable on each of its components' devices.
#include "weft/distribute/strategy_extended.h"

#include "weft/core/str_util.h"

namespace weft::distribute {

StatusOr<std::vector<Output>> UpdateEachComponent(const Scope& scope,
                                                  const DistributedVariable& variable,
                                                  const std::vector<Mirrored>& args,
                                                  const StrategyExtended::UpdateFn& fn) {
  std::vector<Output> updates;
  for (int i = 0; i < variable.num_components(); ++i) {
    const std::string device = CanonicalDevice(variable.devices()[i]);
    std::vector<Output> on_device;
    for (size_t a = 0; a < args.size(); ++a) {
      const Mirrored& arg = args[a];
      int found = -1;
      for (int r = 0; r < arg.num_replicas() && found < 0; ++r) {
        if (CanonicalDevice(arg.device(r)) == device) found = r;
      }
      if (found < 0) {
        return InvalidArgument("update of variable '", variable.name(), "': argument ", a,
                               " has no value on ", variable.devices()[i], " (it lives on [",
                               StrJoin(arg.devices(), ", "), "])");
      }
      on_device.push_back(arg.value(found));
    }
    WEFT_ASSIGN_OR_RETURN(Output update, fn(scope.WithDevice(variable.devices()[i]), i, on_device));
    updates.push_back(update);
  }
  WEFT_RETURN_IF_ERROR(scope.status());
  return updates;
}

StatusOr<std::vector<Mirrored>> BatchReduceByDestination(
    CrossDeviceOps& cross_device_ops, const Scope& scope, ReduceOp op,
    const std::vector<PerReplica>& values,
    const std::vector<std::vector<std::string>>& destinations) {
  if (values.size() != destinations.size()) {
    return InvalidArgument("BatchReduceTo: ", values.size(), " values but ", destinations.size(),
                           " destinations");
  }
  // One BatchReduce per distinct destination list, in order of first appearance, so that values
  // bound for the same devices travel together.
  std::vector<Mirrored> reduced(values.size());
  std::vector<bool> done(values.size(), false);
  for (size_t i = 0; i < values.size(); ++i) {
    if (done[i]) continue;
    std::vector<size_t> group;
    std::vector<PerReplica> batch;
    for (size_t j = i; j < values.size(); ++j) {
      if (!done[j] && SameDevices(destinations[j], destinations[i])) {
        group.push_back(j);
        batch.push_back(values[j]);
        done[j] = true;
      }
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<Mirrored> out,
                          cross_device_ops.BatchReduce(scope, op, batch, destinations[i]));
    if (out.size() != group.size()) {
      return Internal("BatchReduceTo: reducing ", group.size(), " values gave ", out.size());
    }
    for (size_t k = 0; k < group.size(); ++k) reduced[group[k]] = std::move(out[k]);
  }
  return reduced;
}

}  // namespace weft::distribute
