#include "weft/train/dlrm_model.h"

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

// The pairs (i < j) of n vectors, as positions in the flattened [n, n] matrix of their products.
Tensor UpperTrianglePositions(int64_t n) {
  std::vector<int32_t> positions;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) positions.push_back(static_cast<int32_t>(i * n + j));
  }
  return Tensor::FromVector(positions);
}

Status CheckOptions(const DlrmOptions& options) {
  if (options.table_rows.empty()) return InvalidArgument("DlrmOptions: table_rows is empty");
  for (size_t t = 0; t < options.table_rows.size(); ++t) {
    if (options.table_rows[t] <= 0) {
      return InvalidArgument("DlrmOptions: table ", t, " has ", options.table_rows[t], " rows");
    }
  }
  if (options.dense_features <= 0 || options.embedding_dim <= 0) {
    return InvalidArgument("DlrmOptions: dense_features (", options.dense_features,
                           ") and embedding_dim (", options.embedding_dim, ") must be positive");
  }
  if (options.bottom_units.empty() || options.bottom_units.back() != options.embedding_dim) {
    return InvalidArgument("DlrmOptions: the bottom MLP must end with embedding_dim (",
                           options.embedding_dim, ") units, to meet the tables' vectors");
  }
  for (const auto* units : {&options.bottom_units, &options.top_units}) {
    for (int64_t width : *units) {
      if (width <= 0) return InvalidArgument("DlrmOptions: an MLP layer of ", width, " units");
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<DlrmModel>> DlrmModel::Create(DlrmOptions options) {
  WEFT_RETURN_IF_ERROR(CheckOptions(options));
  return std::unique_ptr<DlrmModel>(new DlrmModel(std::move(options)));
}

DlrmModel::DlrmModel(DlrmOptions options)
    : Model(Signature{{"dense", "ids"}, {"click"}}, "dlrm"), options_(std::move(options)) {
  int64_t seed = options_.seed * 1000;
  auto dense = [&seed](int64_t units, const std::string& activation, const std::string& name) {
    return std::make_unique<Dense>(
        units, activation,
        DenseOptions{.name = name, .kernel_initializer = Initializer::GlorotUniform(++seed)});
  };
  for (size_t i = 0; i < options_.bottom_units.size(); ++i) {
    bottom_.push_back(dense(options_.bottom_units[i], "relu", StrCat("bottom_", i)));
  }
  for (size_t i = 0; i < options_.top_units.size(); ++i) {
    top_.push_back(dense(options_.top_units[i], "relu", StrCat("top_", i)));
  }
  top_.push_back(dense(1, "", StrCat("top_", options_.top_units.size())));
  tables_ = std::make_unique<EmbeddingCollection>(
      options_.table_rows, options_.embedding_dim,
      EmbeddingOptions{.name = "tables",
                       .embeddings_initializer = Initializer::RandomUniform(-0.05, 0.05, ++seed)});
  pair_positions_ = UpperTrianglePositions(static_cast<int64_t>(options_.table_rows.size()) + 1);
  set_call([this](const Scope& scope, const std::vector<Output>& inputs) {
    return Call(scope, inputs);
  });
}

std::vector<Output> DlrmModel::Call(const Scope& scope, const std::vector<Output>& inputs) {
  Output bottom = inputs[0];
  for (const auto& layer : bottom_) bottom = (*layer)(scope, bottom);
  // [B, 1 + tables, d]: the bottom MLP's vector, then each table's.
  Output stacked =
      ops::Concat(scope, {ops::ExpandDims(scope, bottom, 1), (*tables_)(scope, inputs[1])}, 1);
  const int64_t n = static_cast<int64_t>(options_.table_rows.size()) + 1;
  Output products = ops::BatchMatMul(scope, stacked, stacked, {.adj_y = true});  // [B, n, n]
  // The pairs i < j of each example, gathered from the flattened products along dimension 0
  // (example b's pair p at b * n * n + position p): a gather along dimension 1 would transpose
  // [B, n * n] in the forward pass and twice in its gradient.
  Output examples = ops::Reshape(scope, ops::Slice(scope, ops::Shape(scope, stacked), {0}, {1}),
                                 Tensor::FromVector(std::vector<int32_t>{}));
  Output starts = ops::Mul(scope, ops::Range(scope, 0, examples, 1), static_cast<int32_t>(n * n));
  Output at =
      ops::Add(scope, ops::ExpandDims(scope, starts, 1), ops::Const(scope, pair_positions_));
  Output pairs = ops::GatherV2(scope, ops::Reshape(scope, products, {int64_t{-1}}), at,
                               0);  // [B, n (n - 1) / 2]
  Output top = ops::Concat(scope, {bottom, pairs}, 1);
  for (const auto& layer : top_) top = (*layer)(scope, top);
  return {top};
}

}  // namespace weft::train
