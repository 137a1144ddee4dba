#include "weft/distribute/sharding/sharded_variable.h"

#include <algorithm>
#include <optional>

#include "weft/core/str_util.h"

namespace weft::distribute {

ShardedVariable ShardedVariable::Create(const Scope& scope, std::string_view name,
                                        const TensorShape& shape, DataType dtype,
                                        const Initializer& initializer,
                                        const Partitioner& partitioner,
                                        const std::vector<std::string>& devices) {
  if (shape.dims() == 0) {
    scope.UpdateStatus(
        InvalidArgument("ShardedVariable '", name, "': a scalar cannot be cut into shards"));
    return ShardedVariable();
  }
  ShardedVariable sharded;
  sharded.name_ = std::string(name);
  sharded.shape_ = shape;
  sharded.dtype_ = dtype;
  const std::vector<int64_t> rows =
      ShardRows(shape.dim_size(0), partitioner.NumShards(shape, dtype));
  int64_t offset = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<int64_t> dims = shape.dim_sizes();
    dims[0] = rows[i];
    Scope placed = devices.empty() ? scope : scope.WithDevice(devices[i % devices.size()]);
    Variable shard = Variable::CreateDirectly(placed, StrCat(name, "/part_", i), TensorShape(dims),
                                              dtype, initializer);
    if (!shard) return ShardedVariable();
    sharded.shards_.push_back(shard);
    sharded.offsets_.push_back(offset);
    offset += rows[i];
  }
  return sharded;
}

ShardedVariable ShardedVariable::FromShards(const Scope& scope, std::string_view name,
                                            std::vector<Variable> shards) {
  if (shards.empty() || shards[0].shape().dims() == 0) {
    scope.UpdateStatus(InvalidArgument("ShardedVariable '", name,
                                       "': needs at least one shard of at least one dimension"));
    return ShardedVariable();
  }
  ShardedVariable sharded;
  sharded.name_ = std::string(name);
  sharded.dtype_ = shards[0].dtype();
  std::vector<int64_t> dims = shards[0].shape().dim_sizes();
  int64_t offset = 0;
  for (const Variable& shard : shards) {
    std::vector<int64_t> trailing = shard.shape().dim_sizes();
    if (shard.dtype() != sharded.dtype_ || trailing.empty() ||
        !std::equal(trailing.begin() + 1, trailing.end(), dims.begin() + 1, dims.end())) {
      scope.UpdateStatus(InvalidArgument("ShardedVariable '", name, "': shard '", shard.name(),
                                         "' has shape ", shard.shape().DebugString(),
                                         ", which does not match shard '", shards[0].name(), "' (",
                                         shards[0].shape().DebugString(), ")"));
      return ShardedVariable();
    }
    sharded.offsets_.push_back(offset);
    offset += trailing[0];
  }
  dims[0] = offset;
  sharded.shape_ = TensorShape(dims);
  sharded.shards_ = std::move(shards);
  return sharded;
}

std::vector<Output> ShardedVariable::initializers() const {
  std::vector<Output> initializers;
  for (const Variable& shard : shards_) initializers.push_back(shard.initializer());
  return initializers;
}

Output ShardedVariable::Lookup(const Scope& scope, const Input& ids) const {
  Scope lookup = scope.NewSubScope(StrCat(name_, "_lookup"));
  if (shards_.size() == 1) return ops::ResourceGather(lookup, shards_[0].handle(), ids, dtype_);
  const int64_t count = static_cast<int64_t>(shards_.size());
  Output flat = ops::Cast(lookup, ops::Reshape(lookup, ids, {int64_t{-1}}), DataType::kInt64);
  // Shard of each id: how many shard starts after the first it has reached.
  std::vector<Output> reached;
  for (int64_t s = 1; s < count; ++s) {
    reached.push_back(
        ops::Cast(lookup, ops::GreaterEqual(lookup, flat, offsets_[s]), DataType::kInt32));
  }
  Output shard_of = reached.size() == 1 ? reached[0] : ops::AddN(lookup, reached);
  Output local = ops::Sub(
      lookup, flat,
      ops::GatherV2(lookup, ops::Const(lookup, Tensor::FromVector(offsets_)), shard_of, 0));
  Output positions = ops::Range(lookup, 0, ops::Size(lookup, flat), 1);
  std::vector<Output> local_parts = ops::DynamicPartition(lookup, local, shard_of, count);
  std::vector<Output> position_parts = ops::DynamicPartition(lookup, positions, shard_of, count);
  if (static_cast<int64_t>(local_parts.size()) != count) return Output();
  std::vector<Output> rows;
  for (int64_t s = 0; s < count; ++s) {
    rows.push_back(ops::ResourceGather(lookup, shards_[s].handle(), local_parts[s], dtype_));
  }
  Output merged = ops::DynamicStitch(lookup, position_parts, rows);
  std::vector<int64_t> row_dims(shape_.dim_sizes().begin() + 1, shape_.dim_sizes().end());
  // The ids' static shape when at most one dimension is unknown (a batch of ids), so that the
  // rows keep a static shape for the layers after the lookup; else computed in the step.
  std::optional<PartialShape> ids_shape;
  if (ids.is_constant()) {
    ids_shape = PartialShape(ids.value().shape());
  } else if (ids.output().node() != nullptr) {
    ids_shape = ids.output().node()->output_shape(ids.output().index());
  }
  if (ids_shape.has_value() && ids_shape->rank_known() &&
      std::count(ids_shape->dims().begin(), ids_shape->dims().end(), PartialShape::kUnknownDim) <=
          1) {
    std::vector<int64_t> dims = ids_shape->dims();
    dims.insert(dims.end(), row_dims.begin(), row_dims.end());
    return ops::Reshape(lookup, merged, ops::Const(lookup, Tensor::FromVector(dims)));
  }
  Output out_shape = ops::Concat(
      lookup,
      {ops::Shape(lookup, ids, DataType::kInt64), ops::Const(lookup, Tensor::FromVector(row_dims))},
      0);
  return ops::Reshape(lookup, merged, out_shape);
}

Output ShardedVariable::Read(const Scope& scope) const {
  std::vector<Output> reads;
  for (const Variable& shard : shards_) reads.push_back(shard.Read(scope));
  return reads.size() == 1 ? reads[0] : ops::Concat(scope, reads, 0);
}

}  // namespace weft::distribute
