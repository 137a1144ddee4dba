#include "weft/distribute/reduce_on_each_destination.h"

#include "weft/core/str_util.h"
#include "weft/graph/builder/ops/array_ops.h"
#include "weft/graph/builder/ops/math_ops.h"

namespace weft::distribute {

StatusOr<Mirrored> ReduceOnEachDestination::Reduce(const Scope& scope, ReduceOp op,
                                                   const PerReplica& value,
                                                   const std::vector<std::string>& destinations) {
  WEFT_RETURN_IF_ERROR(CheckDestinations("Reduce", destinations));
  WEFT_RETURN_IF_ERROR(value.Validate("Reduce: value"));
  WEFT_RETURN_IF_ERROR(scope.status().WithContext("Reduce"));
  const int n = value.num_replicas();
  std::vector<Output> reduced;
  reduced.reserve(destinations.size());
  for (const std::string& device : destinations) {
    Scope on_destination = scope.WithDevice(device);
    Output sum = n == 1 ? ops::Identity(on_destination, value.value(0))
                        : ops::AddN(on_destination, value.values());
    if (op == ReduceOp::kMean && n > 1) sum = ops::Div(on_destination, sum, static_cast<double>(n));
    reduced.push_back(sum);
  }
  WEFT_RETURN_IF_ERROR(scope.status().WithContext("Reduce"));
  return Mirrored(std::move(reduced), destinations);
}

StatusOr<std::vector<Mirrored>> ReduceOnEachDestination::BatchReduce(
    const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
    const std::vector<std::string>& destinations) {
  return ReduceEach(scope, op, values, destinations);
}

StatusOr<Mirrored> ReduceOnEachDestination::Broadcast(
    const Scope& scope, const Output& value, const std::vector<std::string>& destinations) {
  return ReductionToOneDevice().Broadcast(scope, value, destinations);
}

}  // namespace weft::distribute
