#include "weft/train/layers/attention.h"

#include <cmath>

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

// Dimension `axis` of `x` as an int32 scalar: a constant when the graph knows it.
Output Dim(const Scope& scope, const Output& x, int axis) {
  if (x.shape().rank_known() && x.shape().dim(axis) >= 0) {
    return ops::Const(scope, static_cast<int32_t>(x.shape().dim(axis)));
  }
  Output dims = ops::Shape(scope, x);
  return ops::Reshape(scope,
                      ops::Slice(scope, dims, Tensor::FromVector<int32_t>({axis}),
                                 Tensor::FromVector<int32_t>({1})),
                      Tensor::FromVector<int32_t>({}));
}

// [batch, time, features] with the features known; -1 otherwise.
int64_t SequenceFeatures(const PartialShape& shape) {
  if (!shape.rank_known() || shape.rank() != 3) return -1;
  return shape.dim(2);
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t num_heads, int64_t key_dim,
                                       MultiHeadAttentionOptions options)
    : Layer("multi_head_attention", options.name),
      num_heads_(num_heads),
      key_dim_(key_dim),
      options_(std::move(options)) {
  if (options_.value_dim == 0) options_.value_dim = key_dim_;
}

Output MultiHeadAttention::Attend(const Scope& scope, const Output& query, const Output& value,
                                  const Output& key, const Output& key_lengths) {
  if (!scope.ok()) return Output();
  if (!value) {
    Fail(scope, "the value is missing");
    return Output();
  }
  const Output& keys = key ? key : value;
  pending_key_features_ = SequenceFeatures(keys.shape());
  pending_value_features_ = SequenceFeatures(value.shape());
  // Forward reads the other inputs from here: Layer's call takes one input (the query), which is
  // what the weights are built from.
  attend_key_ = keys;
  attend_value_ = value;
  attend_key_lengths_ = key_lengths;
  Output output = (*this)(scope, query);
  pending_key_features_ = pending_value_features_ = -1;
  attend_key_ = attend_value_ = attend_key_lengths_ = Output();
  return output;
}

void MultiHeadAttention::Build(const Scope& scope, const PartialShape& input_shape) {
  const int64_t query_features = SequenceFeatures(input_shape);
  const int64_t key_features = attend_key_ ? pending_key_features_ : query_features;
  const int64_t value_features = attend_value_ ? pending_value_features_ : query_features;
  BuildFor(scope, query_features, key_features, value_features);
}

void MultiHeadAttention::BuildFor(const Scope& scope, int64_t query_features, int64_t key_features,
                                  int64_t value_features) {
  if (num_heads_ <= 0 || key_dim_ <= 0 || options_.value_dim <= 0 || options_.output_dim < 0) {
    return Fail(scope,
                StrCat("num_heads (", num_heads_, "), key_dim (", key_dim_, ") and value_dim (",
                       options_.value_dim, ") must be positive and output_dim (",
                       options_.output_dim, ") not negative"));
  }
  for (auto [what, features] :
       {std::pair{"query", query_features}, {"key", key_features}, {"value", value_features}}) {
    if (features <= 0) {
      return Fail(scope,
                  StrCat("the ", what, " must be [batch, time, features] with the features known"));
    }
  }
  const int64_t output_dim = options_.output_dim > 0 ? options_.output_dim : query_features;
  const int64_t heads = num_heads_;
  AddWeight(scope, "query/kernel", TensorShape({query_features, heads, key_dim_}),
            options_.kernel_initializer);
  if (options_.use_bias) {
    AddWeight(scope, "query/bias", TensorShape({heads, key_dim_}), options_.bias_initializer);
  }
  AddWeight(scope, "key/kernel", TensorShape({key_features, heads, key_dim_}),
            options_.kernel_initializer);
  if (options_.use_bias) {
    AddWeight(scope, "key/bias", TensorShape({heads, key_dim_}), options_.bias_initializer);
  }
  AddWeight(scope, "value/kernel", TensorShape({value_features, heads, options_.value_dim}),
            options_.kernel_initializer);
  if (options_.use_bias) {
    AddWeight(scope, "value/bias", TensorShape({heads, options_.value_dim}),
              options_.bias_initializer);
  }
  AddWeight(scope, "attention_output/kernel", TensorShape({heads, options_.value_dim, output_dim}),
            options_.kernel_initializer);
  if (options_.use_bias) {
    AddWeight(scope, "attention_output/bias", TensorShape({output_dim}), options_.bias_initializer);
  }
}

Output MultiHeadAttention::Forward(const Scope& scope, const Output& input, bool /*training*/,
                                   const std::vector<Variable>& weights) {
  const Output& key = attend_key_ ? attend_key_ : input;
  const Output& value = attend_value_ ? attend_value_ : input;
  const int64_t query_features = weights[0].shape().dim_size(0);
  const size_t per_projection = options_.use_bias ? 2 : 1;
  const int64_t key_features = weights[per_projection].shape().dim_size(0);
  const int64_t value_features = weights[2 * per_projection].shape().dim_size(0);
  for (auto [what, tensor, features] : {std::tuple{"query", &input, query_features},
                                        {"key", &key, key_features},
                                        {"value", &value, value_features}}) {
    if (SequenceFeatures(tensor->shape()) != features) {
      Fail(scope, StrCat("was built for a ", what, " [batch, time, ", features, "], got ",
                         tensor->shape().DebugString()));
      return Output();
    }
  }
  if (attend_key_lengths_ && attend_key_lengths_.dtype() != DataType::kInt32) {
    Fail(scope,
         StrCat("key_lengths must be int32, got ", DataTypeName(attend_key_lengths_.dtype())));
    return Output();
  }
  return Compute(scope, input, key, value, attend_key_lengths_, weights, nullptr);
}

Output MultiHeadAttention::AttendWithCache(const Scope& scope, const Output& input,
                                           KeyValueCache* cache) {
  if (!scope.ok()) return Output();
  const std::vector<Variable> weights = VariablesIn(scope.graph(), 0, false);
  if (weights.empty()) {
    Fail(scope, "AttendWithCache needs the layer called in this graph first (its weights)");
    return Output();
  }
  if (!input || SequenceFeatures(input.shape()) != weights[0].shape().dim_size(0) || !cache->keys ||
      !cache->values) {
    Fail(scope, StrCat("AttendWithCache needs an input [batch, new, ",
                       weights[0].shape().dim_size(0), "] and the cache's keys and values"));
    return Output();
  }
  return Compute(scope.NewSubScope(name()), input, input, input, Output(), weights, cache);
}

Output MultiHeadAttention::Project(const Scope& scope, const Output& input, const Variable& kernel,
                                   const Variable* bias, int64_t dim, bool time_major) const {
  const int64_t features = kernel.shape().dim_size(0);
  Output flat = ops::Reshape(scope, input, Tensor::FromVector<int64_t>({-1, features}));
  Output projected =
      ComputeMatMul(scope, flat,
                    ops::Reshape(scope, kernel.Read(scope),
                                 Tensor::FromVector<int64_t>({features, num_heads_ * dim})));
  if (bias != nullptr) {
    projected = ops::BiasAdd(
        scope, projected,
        ops::Reshape(scope, bias->Read(scope), Tensor::FromVector<int64_t>({num_heads_ * dim})));
  }
  // [batch * time, heads * dim] -> [batch, time, heads, dim] (-> [batch, heads, time, dim]).
  Output split = ops::Reshape(
      scope, projected,
      ops::Concat(scope,
                  {ops::Reshape(scope, Dim(scope, input, 0), Tensor::FromVector<int64_t>({1})),
                   ops::Reshape(scope, Dim(scope, input, 1), Tensor::FromVector<int64_t>({1})),
                   ops::Const(scope, Tensor::FromVector<int32_t>({static_cast<int32_t>(num_heads_),
                                                                  static_cast<int32_t>(dim)}))},
                  0));
  if (time_major) return split;
  return ops::Transpose(scope, split, Tensor::FromVector<int32_t>({0, 2, 1, 3}));
}

Output MultiHeadAttention::Compute(const Scope& scope, const Output& query, const Output& key,
                                   const Output& value, const Output& key_lengths,
                                   const std::vector<Variable>& weights,
                                   KeyValueCache* cache) const {
  const size_t step = options_.use_bias ? 2 : 1;
  auto bias = [&](size_t i) { return options_.use_bias ? &weights[i + 1] : nullptr; };
  // The fused op takes the projections as they come ([batch, time, heads, dim]); the composition
  // and the key/value cache ([batch, heads, time, dim]) need them transposed.
  const bool time_major = options_.fused && cache == nullptr;
  Output q = Project(scope.NewSubScope("query"), query, weights[0], bias(0), key_dim_, time_major);
  Output k =
      Project(scope.NewSubScope("key"), key, weights[step], bias(step), key_dim_, time_major);
  Output v = Project(scope.NewSubScope("value"), value, weights[2 * step], bias(2 * step),
                     options_.value_dim, time_major);
  if (cache != nullptr) {
    // The new positions' keys and values after the cached ones; the causal mask is aligned to the
    // last key, so the new queries see every cached position and those before them.
    k = cache->keys = ops::Concat(scope, {cache->keys, k}, 2);
    v = cache->values = ops::Concat(scope, {cache->values, v}, 2);
  }
  Output attended = options_.fused ? FusedAttention(scope, q, k, v, key_lengths, time_major)
                                   : ComposedAttention(scope, q, k, v, key_lengths);
  // [batch, queries, heads, value_dim] -> [batch * queries, heads * value_dim] -> output.
  if (!time_major) {
    attended = ops::Transpose(scope, attended, Tensor::FromVector<int32_t>({0, 2, 1, 3}));
  }
  const Variable& output_kernel = weights[3 * step];
  const int64_t output_dim = output_kernel.shape().dim_size(2);
  Output merged = ops::Reshape(scope, attended,
                               Tensor::FromVector<int64_t>({-1, num_heads_ * options_.value_dim}));
  Output output = ComputeMatMul(
      scope, merged,
      ops::Reshape(scope, output_kernel.Read(scope),
                   Tensor::FromVector<int64_t>({num_heads_ * options_.value_dim, output_dim})));
  if (options_.use_bias) output = ops::BiasAdd(scope, output, weights[3 * step + 1].Read(scope));
  return ops::Reshape(
      scope, output,
      ops::Concat(
          scope,
          {ops::Reshape(scope, Dim(scope, query, 0), Tensor::FromVector<int64_t>({1})),
           ops::Reshape(scope, Dim(scope, query, 1), Tensor::FromVector<int64_t>({1})),
           ops::Const(scope, Tensor::FromVector<int32_t>({static_cast<int32_t>(output_dim)}))},
          0));
}

Output MultiHeadAttention::FusedAttention(const Scope& scope, const Output& q, const Output& k,
                                          const Output& v, const Output& key_lengths,
                                          bool time_major) const {
  Output lengths = key_lengths;
  if (!lengths) {
    // Every key of every example.
    lengths =
        ops::Fill(scope, ops::Reshape(scope, Dim(scope, q, 0), Tensor::FromVector<int64_t>({1})),
                  Dim(scope, k, time_major ? 1 : 2));
  }
  // Under mixed_bfloat16 the products take bfloat16 operands as the layer's other products do;
  // scores and the softmax's statistics stay float32 inside the kernel.
  const LayerCallContext* context = LayerCallContext::Current();
  const bool bfloat16 =
      context != nullptr && context->options().compute_dtype == DataType::kBFloat16;
  return ops::FusedAttention(scope, q, k, v, lengths,
                             {.causal = options_.causal,
                              .layout = time_major ? "BTHD" : "BHTD",
                              .precision = bfloat16 ? "bfloat16" : "float32"})
      .output;
}

Output MultiHeadAttention::ComposedAttention(const Scope& scope, const Output& q, const Output& k,
                                             const Output& v, const Output& key_lengths) const {
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(key_dim_)));
  Output scores =
      ops::Mul(scope, ops::BatchMatMul(scope, q, k, {.adj_y = true}), ops::Const(scope, scale));
  if (!options_.causal && !key_lengths)
    return ops::BatchMatMul(scope, ops::Softmax(scope, scores), v);
  // A mask of 1 (attend) and 0, [1 or batch, 1, queries, keys]; masked scores get a large negative
  // value before the softmax and their probabilities are zeroed after it, so a row with every key
  // masked gives zeros (as the fused kernel does).
  Scope mask_scope = scope.NewSubScope("mask");
  Output queries = Dim(mask_scope, q, 2);
  Output keys = Dim(mask_scope, k, 2);
  Output mask = ops::Const(mask_scope, 1.0f);
  if (options_.causal) {
    Output ones =
        ops::Fill(mask_scope,
                  ops::Concat(mask_scope,
                              {ops::Reshape(mask_scope, queries, Tensor::FromVector<int64_t>({1})),
                               ops::Reshape(mask_scope, keys, Tensor::FromVector<int64_t>({1}))},
                              0),
                  ops::Const(mask_scope, 1.0f));
    mask = ops::MatrixBandPart(mask_scope, ones, ops::Const(mask_scope, int32_t{-1}),
                               ops::Sub(mask_scope, keys, queries));
  }
  if (key_lengths) {
    Output positions = ops::Range(mask_scope, ops::Const(mask_scope, int32_t{0}), keys,
                                  ops::Const(mask_scope, int32_t{1}));
    Output valid = ops::Cast(mask_scope,
                             ops::Less(mask_scope, positions,
                                       ops::Reshape(mask_scope, key_lengths,
                                                    Tensor::FromVector<int64_t>({-1, 1, 1, 1}))),
                             DataType::kFloat);
    mask = ops::Mul(mask_scope, mask, valid);
  }
  mask = ops::StopGradient(mask_scope, mask);
  Output masked = ops::Add(
      scope, ops::Mul(scope, scores, mask),
      ops::Mul(scope, ops::Sub(scope, mask, ops::Const(scope, 1.0f)), ops::Const(scope, 1e9f)));
  Output probabilities = ops::Mul(scope, ops::Softmax(scope, masked), mask);
  return ops::BatchMatMul(scope, probabilities, v);
}

PositionEmbedding::PositionEmbedding(int64_t sequence_length, PositionEmbeddingOptions options)
    : Layer("position_embedding", options.name),
      sequence_length_(sequence_length),
      options_(std::move(options)) {}

void PositionEmbedding::Build(const Scope& scope, const PartialShape& input_shape) {
  if (sequence_length_ <= 0) {
    return Fail(scope, StrCat("sequence_length must be positive, got ", sequence_length_));
  }
  const int64_t features = SequenceFeatures(input_shape);
  if (features <= 0) {
    return Fail(scope,
                StrCat("needs an input [batch, time, features] with the features known, got ",
                       input_shape.DebugString()));
  }
  AddWeight(scope, "embeddings", TensorShape({sequence_length_, features}), options_.initializer);
}

Output PositionEmbedding::Forward(const Scope& scope, const Output& input, bool /*training*/,
                                  const std::vector<Variable>& weights) {
  const int64_t features = weights[0].shape().dim_size(1);
  if (SequenceFeatures(input.shape()) != features) {
    Fail(scope, StrCat("was built for inputs [batch, time, ", features, "], got ",
                       input.shape().DebugString()));
    return Output();
  }
  const int64_t time = input.shape().dim(1);
  if (time > sequence_length_) {
    Fail(scope, StrCat("an input of ", time, " positions is longer than the table's ",
                       sequence_length_, " (sequence_length)"));
    return Output();
  }
  return ops::BroadcastTo(scope, Rows(scope, input, ops::Const(scope, int32_t{0}), weights[0]),
                          ops::Shape(scope, input));
}

Output PositionEmbedding::From(const Scope& scope, const Output& input, const Output& start) {
  if (!scope.ok()) return Output();
  const std::vector<Variable> weights = VariablesIn(scope.graph(), 0, false);
  if (weights.empty()) {
    Fail(scope, "From needs the layer called in this graph first (its table)");
    return Output();
  }
  if (!input || SequenceFeatures(input.shape()) != weights[0].shape().dim_size(1)) {
    Fail(scope, StrCat("was built for inputs [batch, time, ", weights[0].shape().dim_size(1),
                       "], got ", input ? input.shape().DebugString() : "none"));
    return Output();
  }
  return Rows(scope.NewSubScope(name()), input, start, weights[0]);
}

Output PositionEmbedding::Rows(const Scope& scope, const Output& input, const Output& start,
                               const Variable& table) const {
  const int64_t features = table.shape().dim_size(1);
  // Past the table's end (a length the graph does not know) the Slice fails, at run time.
  Output length = ops::Reshape(scope, Dim(scope, input, 1), Tensor::FromVector<int64_t>({1}));
  Output begin = ops::Concat(scope,
                             {ops::Reshape(scope, start, Tensor::FromVector<int64_t>({1})),
                              ops::Const(scope, Tensor::FromVector<int32_t>({0}))},
                             0);
  Output size = ops::Concat(
      scope,
      {length, ops::Const(scope, Tensor::FromVector<int32_t>({static_cast<int32_t>(features)}))},
      0);
  Output rows = ops::Slice(scope, table.Read(scope), begin, size);
  // The graph knows the rows' shape when it knows the input's length (a Slice of computed sizes
  // does not say), which the layers after it need.
  if (input.shape().dim(1) >= 0) {
    rows = ops::Reshape(scope, rows, Tensor::FromVector<int64_t>({input.shape().dim(1), features}));
  }
  return rows;
}

}  // namespace weft::train
