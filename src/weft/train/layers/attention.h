// The attention layers of a transformer, after the reference's: MultiHeadAttention (Keras) and
// PositionEmbedding (KerasNLP). Each is a Layer (layer.h) whose variables are made on its first
// call in each replica; names and weight shapes follow the reference, so a checkpoint names them
// as a Keras user expects ("attention/query/kernel" [model, heads, key_dim], ...). Not thread-safe
// (see layer.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/train/layers/layer.h"

namespace weft::train {

struct MultiHeadAttentionOptions {
  std::string name{};     // "": "multi_head_attention", ...
  int64_t value_dim = 0;  // per head; 0: key_dim
  // Width of the output; 0: the query's last dimension.
  int64_t output_dim = 0;
  bool use_bias = true;
  // Query i attends to keys j <= i + (keys - queries) only (the reference's use_causal_mask; with
  // as many keys as queries, to itself and the positions before it).
  bool causal = false;
  // Through the FusedAttention op, which streams the softmax over blocks of keys and keeps no
  // [queries, keys] matrix for the backward pass; false composes BatchMatMul, the mask and Softmax
  // (the reference's way; kept to check the fused one against).
  bool fused = true;
  Initializer kernel_initializer = Initializer::GlorotUniform();
  Initializer bias_initializer = Initializer::Zeros();
};

// Attention of `num_heads` heads over inputs [batch, time, features]: each head projects the
// query to key_dim, the key to key_dim and the value to value_dim, weighs the values by the
// softmax of the scaled query-key products, and the heads' results are projected together to
// output_dim. Called on one input it is self-attention; Attend takes query, value and key.
class MultiHeadAttention final : public Layer {
 public:
  MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options = {});
  std::string_view type() const override { return "MultiHeadAttention"; }

  // Query [batch, queries, query_features] against value [batch, keys, value_features] (key: the
  // value when empty). `key_lengths` (int32 [batch], optional) masks the keys at positions at or
  // past each example's length (padding); masked rows give zeros. Errors go to `scope`, naming the
  // layer and the input at fault.
  Output Attend(const Scope& scope, const Output& query, const Output& value,
                const Output& key = Output(), const Output& key_lengths = Output());

  // Self-attention of new positions `input` [batch, new, features] after the positions whose keys
  // and values `cache` holds ([batch, heads, past, key_dim / value_dim]; past may be 0), for
  // decoding one token at a time: on return the cache holds the keys and values of past and new
  // positions. Uses the weights the layer made in this graph (call it there first; replica 0).
  struct KeyValueCache {
    Output keys;
    Output values;
  };
  Output AttendWithCache(const Scope& scope, const Output& input, KeyValueCache* cache);

  int64_t num_heads() const { return num_heads_; }
  int64_t key_dim() const { return key_dim_; }

 private:
  void Build(const Scope& scope, const PartialShape& input_shape) override;
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;
  // The weights, for a query of `query_features` and key/value of `key_features` /
  // `value_features`.
  void BuildFor(const Scope& scope, int64_t query_features, int64_t key_features,
                int64_t value_features);
  // [batch, time, features] -> [batch, heads, time, dim] through kernel [features, heads, dim];
  // [batch, time, heads, dim] when `time_major`.
  Output Project(const Scope& scope, const Output& input, const Variable& kernel,
                 const Variable* bias, int64_t dim, bool time_major) const;
  // With `cache`: the keys and values follow the cached ones, and the cache gets them all.
  Output Compute(const Scope& scope, const Output& query, const Output& key, const Output& value,
                 const Output& key_lengths, const std::vector<Variable>& weights,
                 KeyValueCache* cache) const;
  // The attention of [batch, heads, time, dim] tensors ([batch, time, heads, dim] when
  // `time_major`) through the FusedAttention op.
  Output FusedAttention(const Scope& scope, const Output& q, const Output& k, const Output& v,
                        const Output& key_lengths, bool time_major) const;
  // The plain composition of the same.
  Output ComposedAttention(const Scope& scope, const Output& q, const Output& k, const Output& v,
                           const Output& key_lengths) const;

  int64_t num_heads_;
  int64_t key_dim_;
  MultiHeadAttentionOptions options_;
  // Attend's other inputs and their widths, while it calls the layer on the query (Layer's call
  // takes one input; Build sees only the query's shape).
  Output attend_key_, attend_value_, attend_key_lengths_;
  int64_t pending_key_features_ = -1;
  int64_t pending_value_features_ = -1;
};

struct PositionEmbeddingOptions {
  std::string name{};  // "": "position_embedding", ...
  Initializer initializer = Initializer::GlorotUniform();
};

// Learned positions: for an input [batch, time, features] (time at most sequence_length), the
// first `time` rows of a table [sequence_length, features], broadcast to the input's shape (add
// it to the token embeddings). A longer input fails, naming the layer and both lengths.
class PositionEmbedding final : public Layer {
 public:
  explicit PositionEmbedding(int64_t sequence_length, PositionEmbeddingOptions options = {});
  std::string_view type() const override { return "PositionEmbedding"; }
  int64_t sequence_length() const { return sequence_length_; }
  // The rows [new, features] of positions start, start + 1, ... (int32 scalar `start`) for an
  // input [batch, new, features] (add them to it), for decoding after a cache; the table the layer
  // made in this graph (call it there first). Past the table's end the step fails in a Slice.
  Output From(const Scope& scope, const Output& input, const Output& start);

 private:
  Output Rows(const Scope& scope, const Output& input, const Output& start,
              const Variable& table) const;
  void Build(const Scope& scope, const PartialShape& input_shape) override;
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  int64_t sequence_length_;
  PositionEmbeddingOptions options_;
};

}  // namespace weft::train
