#include "weft/train/layers/embedding_collection.h"

#include "weft/core/str_util.h"
#include "weft/distribute/replica_context.h"
#include "weft/distribute/sharding/sharded_variable.h"
#include "weft/distribute/strategy.h"

namespace weft::train {

EmbeddingCollection::EmbeddingCollection(std::vector<int64_t> table_rows, int64_t output_dim,
                                         EmbeddingOptions options)
    : Layer("embedding_collection", options.name),
      table_rows_(std::move(table_rows)),
      output_dim_(output_dim),
      options_(std::move(options)) {}

void EmbeddingCollection::Build(const Scope& scope, const PartialShape& input_shape) {
  if (table_rows_.empty() || output_dim_ <= 0) {
    return Fail(scope, StrCat("needs tables and a positive output_dim, got ", table_rows_.size(),
                              " tables of dimension ", output_dim_));
  }
  if (input_shape.rank_known() &&
      (input_shape.rank() != 2 ||
       (input_shape.dim(1) >= 0 &&
        input_shape.dim(1) != static_cast<int64_t>(table_rows_.size())))) {
    return Fail(scope, StrCat("needs ids [batch, ", table_rows_.size(),
                              "] (one column per table), got ", input_shape.DebugString()));
  }
  const distribute::ReplicaContext* replica = distribute::CurrentReplicaContext();
  parts_.clear();
  for (size_t t = 0; t < table_rows_.size(); ++t) {
    if (table_rows_[t] <= 0) {
      return Fail(scope, StrCat("table ", t, " has ", table_rows_[t], " rows"));
    }
    const TensorShape shape({table_rows_[t], output_dim_});
    const Initializer initializer =
        options_.embeddings_initializer.WithSeedOffset(static_cast<int64_t>(t));
    // As Embedding: under a strategy that shards, a large table is made in parts, each through the
    // strategy's creator (so each lands on its own ps task).
    const int64_t shards =
        replica != nullptr ? replica->strategy().extended().NumShards(shape, DataType::kFloat) : 1;
    if (shards <= 1) {
      AddWeight(scope, StrCat("table_", t, "/embeddings"), shape, initializer);
      parts_.push_back(1);
      continue;
    }
    const std::vector<int64_t> rows = distribute::ShardRows(table_rows_[t], shards);
    for (size_t i = 0; i < rows.size(); ++i) {
      AddWeight(scope, StrCat("table_", t, "/embeddings/part_", i),
                TensorShape({rows[i], output_dim_}), initializer);
    }
    parts_.push_back(rows.size());
  }
}

Output EmbeddingCollection::Forward(const Scope& scope, const Output& input, bool /*training*/,
                                    const std::vector<Variable>& weights) {
  if (input.dtype() != DataType::kInt32 && input.dtype() != DataType::kInt64) {
    Fail(scope, StrCat("needs int32 or int64 ids, got ", DataTypeName(input.dtype())));
    return Output();
  }
  std::vector<distribute::ShardedVariable> tables;
  std::vector<Output> ids;
  size_t next = 0;
  for (size_t t = 0; t < parts_.size(); ++t) {
    std::vector<Variable> mine(weights.begin() + static_cast<std::ptrdiff_t>(next),
                               weights.begin() + static_cast<std::ptrdiff_t>(next + parts_[t]));
    next += parts_[t];
    tables.push_back(
        distribute::ShardedVariable::FromShards(scope, StrCat("table_", t), std::move(mine)));
    const int64_t column = static_cast<int64_t>(t);
    ids.push_back(ops::Slice(scope, input, {int64_t{0}, column}, {int64_t{-1}, int64_t{1}}));
  }
  std::vector<Output> rows = distribute::ShardedVariable::LookupMany(scope, tables, ids);
  if (rows.size() != tables.size()) return Output();
  return ops::Concat(scope, rows, 1);  // each [batch, 1, dim]
}

}  // namespace weft::train
