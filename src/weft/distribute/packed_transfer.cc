#include "weft/distribute/packed_transfer.h"

#include <map>
#include <tuple>

#include "weft/core/str_util.h"
#include "weft/distribute/values.h"
#include "weft/graph/builder/ops/array_ops.h"

namespace weft::distribute {

StatusOr<std::vector<Output>> MoveTogether(const Scope& scope, const std::vector<Output>& values,
                                           const std::vector<std::string>& destinations,
                                           const std::vector<TensorShape>& shapes) {
  if (values.size() != destinations.size() || values.size() != shapes.size()) {
    return InvalidArgument("MoveTogether: ", values.size(), " values, ", destinations.size(),
                           " destinations and ", shapes.size(), " shapes");
  }
  WEFT_RETURN_IF_ERROR(scope.status());
  std::vector<Output> moved = values;
  // (source, destination, dtype) -> the values' positions, in order.
  std::map<std::tuple<std::string, std::string, DataType>, std::vector<size_t>> groups;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i]) return InvalidArgument("MoveTogether: value ", i, " is empty");
    const std::string& source = values[i].node()->requested_device();
    if (source.empty()) continue;
    const std::string from = CanonicalDevice(source);
    const std::string to = CanonicalDevice(destinations[i]);
    if (from == to) continue;
    groups[{from, to, values[i].dtype()}].push_back(i);
  }
  const Scope unordered = scope.WithNoControlDependencies();
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    const auto& [from, to, dtype] = key;
    const Scope at_source = unordered.WithDevice(from).NewSubScope("pack");
    std::vector<Output> flat;
    for (size_t i : members) {
      flat.push_back(ops::Reshape(at_source, values[i], Tensor::FromVector<int64_t>({-1})));
    }
    const Output packed = ops::Concat(at_source, flat, Tensor::Scalar<int32_t>(0));
    const Scope at_destination =
        unordered.WithDevice(destinations[members[0]]).NewSubScope("unpack");
    int64_t offset = 0;
    for (size_t i : members) {
      const int64_t size = shapes[i].num_elements();
      const Output piece = ops::Slice(at_destination, packed, Tensor::FromVector<int64_t>({offset}),
                                      Tensor::FromVector<int64_t>({size}));
      moved[i] = ops::Reshape(at_destination, piece, Tensor::FromVector(shapes[i].dim_sizes()));
      offset += size;
    }
  }
  WEFT_RETURN_IF_ERROR(scope.status());
  return moved;
}

}  // namespace weft::distribute
