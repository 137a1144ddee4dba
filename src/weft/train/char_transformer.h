// CharTransformer: workload W6's decoder-only transformer over bytes, as a Model of one input
// "tokens" (int32 [batch, time], time at most `context`) and one output "logits" ([batch, time,
// vocabulary], the next byte's scores at every position). Pre-LayerNorm blocks (attention with a
// causal mask, then an MLP with exact GELU), learned positions, an untied output layer, no
// dropout; weights drawn from N(0, 0.02) as in GPT-2, biases zero. Owns its layers; not
// thread-safe (as Model).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "weft/train/layers/attention.h"
#include "weft/train/layers/core.h"
#include "weft/train/layers/normalization.h"
#include "weft/train/model.h"

namespace weft::train {

struct CharTransformerOptions {
  int64_t vocabulary = 256;
  int64_t context = 128;  // the position table's length
  int64_t layers = 4;
  int64_t model_dim = 256;
  int64_t heads = 4;  // must divide model_dim
  int64_t mlp_dim = 1024;
  double layer_norm_epsilon = 1e-5;
  bool fused_attention = true;  // MultiHeadAttentionOptions::fused
  int64_t seed = 1;             // every initializer derives from it
};

class CharTransformer final : public Model {
 public:
  // InvalidArgument naming the option at fault.
  static StatusOr<std::unique_ptr<CharTransformer>> Create(CharTransformerOptions options);

  const CharTransformerOptions& options() const { return options_; }

  // The graph of one decoding step with a key/value cache, for generation: `new_positions` new
  // tokens after the positions the cache holds. Added to the model's graph beside its own (the
  // model must be built: Build, Fit or Evaluate), reading its variables; once per length, later
  // calls return the same step.
  struct DecodeStep {
    Output tokens;                     // Placeholder int32 [batch, new_positions]
    Output start;                      // Placeholder int32 []: the first new position
    std::vector<Output> past_keys;     // Placeholders [batch, heads, past, head_dim],
    std::vector<Output> past_values;   // one per block
    Output logits;                     // [batch, new_positions, vocabulary]
    std::vector<Output> keys, values;  // [batch, heads, past + new, head_dim]: the next past
  };
  StatusOr<DecodeStep> AddDecodeStep(int64_t new_positions);

 private:
  struct Block {
    std::unique_ptr<LayerNormalization> attention_norm;
    std::unique_ptr<MultiHeadAttention> attention;
    std::unique_ptr<LayerNormalization> mlp_norm;
    std::unique_ptr<Dense> mlp_in;
    std::unique_ptr<Dense> mlp_out;
  };

  explicit CharTransformer(CharTransformerOptions options);
  Output Call(const Scope& scope, const Output& tokens);

  CharTransformerOptions options_;
  std::unique_ptr<Embedding> tokens_;
  std::unique_ptr<PositionEmbedding> positions_;
  std::vector<Block> blocks_;
  std::unique_ptr<LayerNormalization> final_norm_;
  std::unique_ptr<Dense> head_;
  std::map<int64_t, DecodeStep> decode_steps_;  // AddDecodeStep's, by new_positions
};

}  // namespace weft::train
