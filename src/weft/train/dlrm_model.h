// DlrmModel: workload W7's recommendation model (DLRM) as a Model of two named inputs and one
// output, after Naumov et al.: "dense" float [batch, dense_features] through a bottom MLP
// (13-64-16 in W7), "ids" int64 [batch, tables] looked up in an EmbeddingCollection (one table
// per column, dimension 16), the dot products of every pair of the tables' vectors and the bottom
// MLP's (351 pairs for 27 vectors) beside the bottom output, and a top MLP (256-128-1) giving the
// "click" logit. Under a strategy that shards (ParameterServerStrategy) each table above its
// threshold is cut across the ps tasks. Owns its layers; not thread-safe (as Model).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "weft/train/layers/core.h"
#include "weft/train/layers/embedding_collection.h"
#include "weft/train/model.h"

namespace weft::train {

struct DlrmOptions {
  int64_t dense_features = 13;
  std::vector<int64_t> table_rows;  // one table per categorical feature
  int64_t embedding_dim = 16;
  std::vector<int64_t> bottom_units = {64, 16};  // the last must equal embedding_dim
  std::vector<int64_t> top_units = {256, 128};   // then one logit
  int64_t seed = 1;                              // every initializer derives from it
};

class DlrmModel final : public Model {
 public:
  // InvalidArgument naming the option at fault (no tables, a bottom MLP whose output is not
  // embedding_dim wide, a non-positive size).
  static StatusOr<std::unique_ptr<DlrmModel>> Create(DlrmOptions options);

 private:
  explicit DlrmModel(DlrmOptions options);
  std::vector<Output> Call(const Scope& scope, const std::vector<Output>& inputs);

  DlrmOptions options_;
  std::vector<std::unique_ptr<Dense>> bottom_, top_;
  std::unique_ptr<EmbeddingCollection> tables_;
  Tensor pair_positions_;  // the pairs (i < j) as positions in the flattened [n, n] products
};

}  // namespace weft::train
