// ReductionToOneDevice (AddN on one device, then an Identity per destination) and the argument
// checks every CrossDeviceOps shares.
#include "weft/distribute/cross_device_ops.h"

#include "weft/core/str_util.h"
#include "weft/graph/builder/ops/array_ops.h"
#include "weft/graph/builder/ops/math_ops.h"

namespace weft::distribute {
namespace {

// The scope's error (from building the nodes just added), or OK.
Status ScopeStatus(const Scope& scope, std::string_view what) {
  return scope.status().WithContext(what);
}

}  // namespace

Status CheckDestinations(std::string_view what, const std::vector<std::string>& destinations) {
  if (destinations.empty()) return InvalidArgument(what, ": destinations must not be empty");
  return Status::OK();
}

Status CheckBatch(std::string_view what, const std::vector<PerReplica>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    WEFT_RETURN_IF_ERROR(values[i].Validate(StrCat(what, ": value ", i)));
    if (values[i].num_replicas() != values[0].num_replicas()) {
      return InvalidArgument(what, ": value ", i, " has ", values[i].num_replicas(),
                             " replicas but value 0 has ", values[0].num_replicas());
    }
  }
  return Status::OK();
}

StatusOr<std::vector<Mirrored>> CrossDeviceOps::ReduceEach(
    const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
    const std::vector<std::string>& destinations) {
  WEFT_RETURN_IF_ERROR(CheckDestinations("BatchReduce", destinations));
  WEFT_RETURN_IF_ERROR(CheckBatch("BatchReduce", values));
  std::vector<Mirrored> results;
  results.reserve(values.size());
  for (const PerReplica& value : values) {
    WEFT_ASSIGN_OR_RETURN(Mirrored reduced, Reduce(scope, op, value, destinations));
    results.push_back(std::move(reduced));
  }
  return results;
}

StatusOr<Mirrored> ReductionToOneDevice::Reduce(const Scope& scope, ReduceOp op,
                                                const PerReplica& value,
                                                const std::vector<std::string>& destinations) {
  WEFT_RETURN_IF_ERROR(CheckDestinations("Reduce", destinations));
  WEFT_RETURN_IF_ERROR(value.Validate("Reduce: value"));
  WEFT_RETURN_IF_ERROR(ScopeStatus(scope, "Reduce"));
  const int n = value.num_replicas();
  if (n == 1 && destinations.size() == 1 &&
      CanonicalDevice(value.device(0)) == CanonicalDevice(destinations[0])) {
    Output copy = ops::Identity(scope.WithDevice(destinations[0]), value.value(0));
    WEFT_RETURN_IF_ERROR(ScopeStatus(scope, "Reduce"));
    return Mirrored({copy}, destinations);
  }
  const std::string& reduce_device =
      options_.reduce_to_device.empty() ? destinations[0] : options_.reduce_to_device;
  Scope on_reduce_device = scope.WithDevice(reduce_device);
  Output reduced = n == 1 ? ops::Identity(on_reduce_device, value.value(0))
                          : ops::AddN(on_reduce_device, value.values());
  if (op == ReduceOp::kMean && n > 1) {
    reduced = ops::Div(on_reduce_device, reduced, static_cast<double>(n));
  }
  WEFT_RETURN_IF_ERROR(ScopeStatus(scope, "Reduce"));
  return Broadcast(scope, reduced, destinations);
}

StatusOr<std::vector<Mirrored>> ReductionToOneDevice::BatchReduce(
    const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
    const std::vector<std::string>& destinations) {
  return ReduceEach(scope, op, values, destinations);
}

StatusOr<Mirrored> ReductionToOneDevice::Broadcast(const Scope& scope, const Output& value,
                                                   const std::vector<std::string>& destinations) {
  WEFT_RETURN_IF_ERROR(CheckDestinations("Broadcast", destinations));
  if (!value) return InvalidArgument("Broadcast: the value to broadcast is empty");
  std::vector<Output> copies;
  copies.reserve(destinations.size());
  for (const std::string& device : destinations) {
    copies.push_back(ops::Identity(scope.WithDevice(device), value));
  }
  WEFT_RETURN_IF_ERROR(ScopeStatus(scope, "Broadcast"));
  return Mirrored(std::move(copies), destinations);
}

}  // namespace weft::distribute
