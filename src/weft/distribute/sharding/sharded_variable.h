// ShardedVariable: one logical variable cut along its first dimension into shards, each a
// Variable on its own device ("emb/part_0", "emb/part_1", ..., as the reference names them), so a
// table larger than one task's memory lives across parameter servers. Lookup runs each shard's
// share of the ids where the shard lives (only ids travel there and only rows come back), and the
// optimizer sees each shard's lookups as a sparse gradient of that shard (ResourceSparseApply*
// where it lives). A value, like Variable; not thread-safe (it builds a graph).
#pragma once

#include <string>
#include <vector>

#include "weft/distribute/sharding/partitioners.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/variable.h"

namespace weft::distribute {

class ShardedVariable {
 public:
  ShardedVariable() = default;

  // Cuts a variable of `shape` into partitioner.NumShards(shape, dtype) shards of ShardRows rows,
  // shard i on devices[i % devices.size()] (round-robin; no device given: unplaced), each
  // initialized by `initializer` for its own shape. Errors go to `scope`; the result is then
  // empty.
  static ShardedVariable Create(const Scope& scope, std::string_view name, const TensorShape& shape,
                                DataType dtype, const Initializer& initializer,
                                const Partitioner& partitioner,
                                const std::vector<std::string>& devices);

  // The variable whose shards are `shards`, made elsewhere (a layer's weights, each made through a
  // strategy's variable creator), in row order: same dtype and trailing dimensions, first
  // dimensions adding up to the whole. Errors go to `scope`; the result is then empty.
  static ShardedVariable FromShards(const Scope& scope, std::string_view name,
                                    std::vector<Variable> shards);

  explicit operator bool() const { return !shards_.empty(); }
  const std::string& name() const { return name_; }
  const TensorShape& shape() const { return shape_; }
  DataType dtype() const { return dtype_; }
  const std::vector<Variable>& shards() const { return shards_; }
  // The first row of each shard in the whole variable (offsets()[0] == 0).
  const std::vector<int64_t>& offsets() const { return offsets_; }
  // Every shard's initializer.
  std::vector<Output> initializers() const;

  // Rows `ids` (int32 or int64, any shape) of the whole variable: ids.shape + shape[1:]. Each
  // shard gathers its own ids on its device; an id outside the variable fails the step naming it
  // (as the shard's local row) and the shard.
  Output Lookup(const Scope& scope, const Input& ids) const;
  // The whole value, the shards concatenated (a dense read: for saving or evaluation, not steps).
  Output Read(const Scope& scope) const;

  // Lookup of `ids[t]` in `tables[t]` for every t, with one exchange per device instead of one per
  // shard: the ids every shard on a device needs travel there as one tensor, and its shards' rows
  // come back as one (their gradients then return as one, and are cut per shard on that device,
  // where each shard's sparse update runs). A recommendation model's tens of tables cost a step
  // three transfers per parameter server rather than three per shard. The tables share one dtype;
  // errors go to `scope` (the result is then empty).
  static std::vector<Output> LookupMany(const Scope& scope,
                                        const std::vector<ShardedVariable>& tables,
                                        const std::vector<Output>& ids);

 private:
  // A lookup's ids by shard: each shard's local row numbers, and where in the flattened ids each
  // came from. Empty after an error.
  struct SplitIds {
    std::vector<Output> local, positions;
  };
  SplitIds PartitionIds(const Scope& lookup, const Input& ids) const;
  // The rows of `ids` from each shard's `rows` (in SplitIds' order): ids.shape + shape[1:].
  Output Assemble(const Scope& lookup, const Input& ids, const SplitIds& split,
                  const std::vector<Output>& rows) const;

  std::string name_;
  TensorShape shape_;
  DataType dtype_ = DataType::kInvalid;
  std::vector<Variable> shards_;
  std::vector<int64_t> offsets_;
};

}  // namespace weft::distribute
