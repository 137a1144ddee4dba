// AllReduceCrossDeviceOps: bucket packing and one CollectiveAllReduce per replica per bucket.
#include "weft/distribute/all_reduce_cross_device_ops.h"

#include <algorithm>
#include <map>

#include "weft/core/str_util.h"
#include "weft/graph/builder/ops/collective_ops.h"
#include "weft/graph/builder/ops/math_ops.h"

namespace weft::distribute {
namespace {

bool CollectiveSupports(DataType dtype) {
  return dtype == DataType::kFloat || dtype == DataType::kDouble || dtype == DataType::kBFloat16;
}

// Static size in bytes, or -1 when the shape is not fully known.
int64_t StaticBytes(DataType dtype, const PartialShape& shape) {
  if (!shape.IsFullyDefined()) return -1;
  return shape.ToTensorShape().num_elements() * static_cast<int64_t>(DataTypeSize(dtype));
}

}  // namespace

std::vector<std::vector<int>> PackIntoBuckets(const std::vector<DataType>& dtypes,
                                              const std::vector<PartialShape>& shapes,
                                              int64_t bytes_per_pack) {
  struct Open {
    std::vector<int> members;
    int64_t bytes = 0;
  };
  std::vector<std::vector<int>> buckets;
  std::map<DataType, Open> open;  // one bucket being filled per dtype
  for (int i = static_cast<int>(dtypes.size()) - 1; i >= 0; --i) {
    const int64_t bytes = StaticBytes(dtypes[i], shapes[i]);
    if (bytes < 0) {
      buckets.push_back({i});
      continue;
    }
    Open& bucket = open[dtypes[i]];
    if (!bucket.members.empty() && bytes_per_pack > 0 && bucket.bytes + bytes > bytes_per_pack) {
      buckets.push_back(std::move(bucket.members));
      bucket = Open();
    }
    bucket.members.push_back(i);
    bucket.bytes += bytes;
  }
  // The remaining open buckets, in the order of their first member.
  std::vector<std::vector<int>> rest;
  for (auto& [dtype, bucket] : open) {
    if (!bucket.members.empty()) rest.push_back(std::move(bucket.members));
  }
  std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a[0] > b[0]; });
  for (auto& bucket : rest) buckets.push_back(std::move(bucket));
  return buckets;
}

StatusOr<Mirrored> AllReduceCrossDeviceOps::Reduce(const Scope& scope, ReduceOp op,
                                                   const PerReplica& value,
                                                   const std::vector<std::string>& destinations) {
  WEFT_RETURN_IF_ERROR(CheckDestinations("Reduce", destinations));
  WEFT_RETURN_IF_ERROR(value.Validate("Reduce: value"));
  WEFT_ASSIGN_OR_RETURN(std::vector<Mirrored> reduced,
                        BatchReduce(scope, op, {value}, destinations));
  return std::move(reduced[0]);
}

StatusOr<std::vector<Mirrored>> AllReduceCrossDeviceOps::BatchReduce(
    const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
    const std::vector<std::string>& destinations) {
  WEFT_RETURN_IF_ERROR(CheckDestinations("BatchReduce", destinations));
  WEFT_RETURN_IF_ERROR(CheckBatch("BatchReduce", values));
  std::vector<Mirrored> results(values.size());
  // Values the collective can reduce in place, and the rest for the fallback.
  std::vector<int> collective;
  for (int i = 0; i < static_cast<int>(values.size()); ++i) {
    if (SameDevices(values[i].devices(), destinations) && CollectiveSupports(values[i].dtype())) {
      collective.push_back(i);
    } else if (options_.num_workers > 1) {
      return InvalidArgument("BatchReduce: value ", i, " (", DataTypeName(values[i].dtype()),
                             " on ", values[i].devices().size(),
                             " devices) cannot be reduced across ", options_.num_workers,
                             " workers: only float32, float64 and bfloat16 values whose devices "
                             "are the destinations are");
    } else {
      WEFT_ASSIGN_OR_RETURN(results[i], fallback_.Reduce(scope, op, values[i], destinations));
    }
  }
  if (collective.empty()) return results;

  // The type each value travels in: float32 values in communication_dtype.
  auto travels_as = [&](int i) {
    return values[i].dtype() == DataType::kFloat ? options_.communication_dtype : values[i].dtype();
  };
  std::vector<DataType> dtypes;
  std::vector<PartialShape> shapes;
  for (int i : collective) {
    dtypes.push_back(travels_as(i));
    shapes.push_back(values[i].primary().shape());
  }
  const int replicas = static_cast<int>(destinations.size());
  std::vector<std::vector<Output>> reduced(values.size(), std::vector<Output>(replicas));
  for (const std::vector<int>& bucket : PackIntoBuckets(dtypes, shapes, options_.bytes_per_pack)) {
    ops::CollectiveAllReduceAttrs attrs{.group_size = replicas * options_.num_workers,
                                        .group_key = options_.group_key,
                                        .instance_key = next_instance_key_++,
                                        .final_op = op == ReduceOp::kMean ? "Div" : "Id"};
    for (int r = 0; r < replicas; ++r) {
      const Scope on_device = scope.WithDevice(destinations[r]);
      std::vector<Output> inputs;
      for (int member : bucket) {
        const int i = collective[member];
        inputs.push_back(travels_as(i) == values[i].dtype()
                             ? values[i].value(r)
                             : ops::Cast(on_device, values[i].value(r), travels_as(i)));
      }
      std::vector<Output> outputs =
          ops::CollectiveAllReduce(Ordered(scope, r).WithDevice(destinations[r]), inputs, attrs);
      WEFT_RETURN_IF_ERROR(scope.status().WithContext("BatchReduce"));
      Remember(r, outputs[0]);
      for (size_t k = 0; k < bucket.size(); ++k) {
        const int i = collective[bucket[k]];
        reduced[i][r] = travels_as(i) == values[i].dtype()
                            ? outputs[k]
                            : ops::Cast(on_device, outputs[k], values[i].dtype());
      }
      WEFT_RETURN_IF_ERROR(scope.status().WithContext("BatchReduce"));
    }
  }
  for (int i : collective) results[i] = Mirrored(std::move(reduced[i]), destinations);
  return results;
}

Scope AllReduceCrossDeviceOps::Ordered(const Scope& scope, int r) const {
  if (!options_.order_collectives || r >= static_cast<int>(last_collective_.size()) ||
      !last_collective_[r]) {
    return scope;
  }
  return scope.WithControlDependencies({last_collective_[r]});
}

void AllReduceCrossDeviceOps::Remember(int r, const Output& collective) {
  if (!options_.order_collectives) return;
  if (r >= static_cast<int>(last_collective_.size())) last_collective_.resize(r + 1);
  last_collective_[r] = collective;
}

StatusOr<Mirrored> AllReduceCrossDeviceOps::Broadcast(
    const Scope& scope, const Output& value, const std::vector<std::string>& destinations) {
  return fallback_.Broadcast(scope, value, destinations);
}

}  // namespace weft::distribute
