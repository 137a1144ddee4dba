#include "weft/distribute/sharding/sharded_variable.h"

#include <algorithm>
#include <map>
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

namespace {

// `parts` one after another along dimension 0 (ConcatV2 needs two or more).
Output ConcatRows(const Scope& scope, const std::vector<Output>& parts) {
  return parts.size() == 1 ? parts[0] : ops::Concat(scope, parts, 0);
}

// One device's share of LookupMany: every part's local ids (`parts[e]`, for `shards[e]`, which
// live on `device`) in one tensor (the ids, then which part each is for) to `device`, split there,
// one gather per shard, and the rows back in one tensor, split per part again where `lookup`
// runs. Empty after an error.
std::vector<Output> ExchangeWithDevice(const Scope& lookup, const std::string& device,
                                       const std::vector<Output>& parts,
                                       const std::vector<Variable>& shards, DataType dtype) {
  const int64_t count = static_cast<int64_t>(parts.size());
  std::vector<Output> labels;
  for (int64_t e = 0; e < count; ++e) {
    labels.push_back(ops::Fill(lookup,
                               ops::Reshape(lookup, ops::Size(lookup, parts[e]), {int64_t{1}}),
                               ops::Const(lookup, static_cast<int32_t>(e))));
  }
  Output all_labels = ConcatRows(lookup, labels);
  Output packed = ops::Concat(
      lookup, {ConcatRows(lookup, parts), ops::Cast(lookup, all_labels, DataType::kInt64)}, 0);
  const Scope there = lookup.WithDevice(device);
  Output half =
      ops::Reshape(there, ops::Div(there, ops::Size(there, packed), ops::Const(there, int32_t{2})),
                   {int64_t{1}});
  Output received_ids = ops::Slice(
      there, packed, ops::Const(there, Tensor::FromVector(std::vector<int32_t>{0})), half);
  Output received_labels =
      ops::Cast(there,
                ops::Slice(there, packed, half,
                           ops::Const(there, Tensor::FromVector(std::vector<int32_t>{-1}))),
                DataType::kInt32);
  std::vector<Output> received = ops::DynamicPartition(there, received_ids, received_labels, count);
  if (static_cast<int64_t>(received.size()) != count) return {};
  std::vector<Output> gathered;
  for (int64_t e = 0; e < count; ++e) {
    gathered.push_back(ops::ResourceGather(there, shards[e].handle(), received[e], dtype));
  }
  return ops::DynamicPartition(lookup, ConcatRows(there, gathered), all_labels, count);
}

}  // namespace

ShardedVariable::SplitIds ShardedVariable::PartitionIds(const Scope& lookup,
                                                        const Input& ids) const {
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
  SplitIds split;
  split.local = ops::DynamicPartition(lookup, local, shard_of, count);
  split.positions = ops::DynamicPartition(lookup, positions, shard_of, count);
  if (static_cast<int64_t>(split.local.size()) != count) return SplitIds();
  return split;
}

Output ShardedVariable::Assemble(const Scope& lookup, const Input& ids, const SplitIds& split,
                                 const std::vector<Output>& rows) const {
  Output merged = ops::DynamicStitch(lookup, split.positions, rows);
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

Output ShardedVariable::Lookup(const Scope& scope, const Input& ids) const {
  Scope lookup = scope.NewSubScope(StrCat(name_, "_lookup"));
  if (shards_.size() == 1) return ops::ResourceGather(lookup, shards_[0].handle(), ids, dtype_);
  SplitIds split = PartitionIds(lookup, ids);
  if (split.local.empty()) return Output();
  std::vector<Output> rows;
  for (size_t s = 0; s < shards_.size(); ++s) {
    rows.push_back(ops::ResourceGather(lookup, shards_[s].handle(), split.local[s], dtype_));
  }
  return Assemble(lookup, ids, split, rows);
}

std::vector<Output> ShardedVariable::LookupMany(const Scope& scope,
                                                const std::vector<ShardedVariable>& tables,
                                                const std::vector<Output>& ids) {
  if (tables.size() != ids.size()) {
    scope.UpdateStatus(
        InvalidArgument("LookupMany: ", tables.size(), " tables but ", ids.size(), " id tensors"));
    return {};
  }
  Scope lookup = scope.NewSubScope("lookup_many");
  // Each table's ids split by shard, and the shards grouped by device, in order of first use.
  struct Entry {
    size_t table, shard;
  };
  std::vector<SplitIds> splits(tables.size());
  std::vector<std::string> devices;
  std::map<std::string, std::vector<Entry>> entries_on;
  for (size_t t = 0; t < tables.size(); ++t) {
    const ShardedVariable& table = tables[t];
    if (!table || table.dtype_ != tables[0].dtype_) {
      scope.UpdateStatus(InvalidArgument("LookupMany: table ", t, " ('", table.name_,
                                         "') is empty or not of table 0's dtype"));
      return {};
    }
    const Scope mine = lookup.NewSubScope(table.name_);
    if (table.shards_.size() == 1) {
      Output flat = ops::Cast(mine, ops::Reshape(mine, ids[t], {int64_t{-1}}), DataType::kInt64);
      splits[t] = {{flat}, {ops::Range(mine, 0, ops::Size(mine, flat), 1)}};
    } else {
      splits[t] = table.PartitionIds(mine, ids[t]);
      if (splits[t].local.empty()) return {};
    }
    for (size_t s = 0; s < table.shards_.size(); ++s) {
      const std::string& device = table.shards_[s].handle().node()->requested_device();
      if (!entries_on.contains(device)) devices.push_back(device);
      entries_on[device].push_back({t, s});
    }
  }
  // Per device one exchange (ExchangeWithDevice); the gradients of its rows then travel as one
  // tensor too, and are cut per shard where the shards live.
  std::vector<std::vector<Output>> rows(tables.size());
  for (size_t t = 0; t < tables.size(); ++t) rows[t].resize(tables[t].shards_.size());
  for (const std::string& device : devices) {
    const std::vector<Entry>& entries = entries_on[device];
    const int64_t count = static_cast<int64_t>(entries.size());
    if (device.empty() || device == lookup.device()) {
      // Shards here (or placed with their ids): nothing to exchange.
      for (const Entry& entry : entries) {
        const ShardedVariable& table = tables[entry.table];
        rows[entry.table][entry.shard] =
            ops::ResourceGather(lookup, table.shards_[entry.shard].handle(),
                                splits[entry.table].local[entry.shard], table.dtype_);
      }
      continue;
    }
    std::vector<Output> parts;
    std::vector<Variable> shards;
    for (const Entry& entry : entries) {
      parts.push_back(splits[entry.table].local[entry.shard]);
      shards.push_back(tables[entry.table].shards_[entry.shard]);
    }
    std::vector<Output> back = ExchangeWithDevice(lookup, device, parts, shards, tables[0].dtype_);
    if (static_cast<int64_t>(back.size()) != count) return {};
    for (int64_t e = 0; e < count; ++e) rows[entries[e].table][entries[e].shard] = back[e];
  }
  std::vector<Output> results;
  for (size_t t = 0; t < tables.size(); ++t) {
    results.push_back(
        tables[t].Assemble(lookup.NewSubScope(tables[t].name_), ids[t], splits[t], rows[t]));
  }
  return results;
}

Output ShardedVariable::Read(const Scope& scope) const {
  std::vector<Output> reads;
  for (const Variable& shard : shards_) reads.push_back(shard.Read(scope));
  return reads.size() == 1 ? reads[0] : ops::Concat(scope, reads, 0);
}

}  // namespace weft::distribute
