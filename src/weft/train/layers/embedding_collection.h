// EmbeddingCollection: one embedding table per categorical feature, looked up together, after
// the collections of recommendation models (TorchRec's EmbeddingCollection): ids [batch, tables]
// (column t an id of table t) -> [batch, tables, dim]. Under a strategy that shards (parameter
// servers) each table is cut as Embedding cuts one, and the lookup moves one tensor of ids and
// one of rows per task instead of one per table part (ShardedVariable::LookupMany).
#pragma once

#include <cstdint>
#include <vector>

#include "weft/train/layers/core.h"

namespace weft::train {

class EmbeddingCollection final : public Layer {
 public:
  // Table t has table_rows[t] rows of `output_dim`; each table's initializer is `options`' with
  // its seed offset by t (so tables start different).
  EmbeddingCollection(std::vector<int64_t> table_rows, int64_t output_dim,
                      EmbeddingOptions options = {});
  std::string_view type() const override { return "EmbeddingCollection"; }

 private:
  void Build(const Scope& scope, const PartialShape& input_shape) override;
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  std::vector<int64_t> table_rows_;
  int64_t output_dim_;
  EmbeddingOptions options_;
  std::vector<size_t> parts_;  // per table, how many weights Build made for it
};

}  // namespace weft::train
