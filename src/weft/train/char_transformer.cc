#include "weft/train/char_transformer.h"

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

Status CheckOptions(const CharTransformerOptions& options) {
  for (auto [name, value] : {std::pair{"vocabulary", options.vocabulary},
                             {"context", options.context},
                             {"layers", options.layers},
                             {"model_dim", options.model_dim},
                             {"heads", options.heads},
                             {"mlp_dim", options.mlp_dim}}) {
    if (value <= 0) return InvalidArgument("CharTransformerOptions: ", name, " is ", value);
  }
  if (options.model_dim % options.heads != 0) {
    return InvalidArgument("CharTransformerOptions: heads (", options.heads,
                           ") must divide model_dim (", options.model_dim, ")");
  }
  if (!(options.layer_norm_epsilon > 0)) {
    return InvalidArgument("CharTransformerOptions: layer_norm_epsilon is ",
                           options.layer_norm_epsilon);
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<CharTransformer>> CharTransformer::Create(CharTransformerOptions options) {
  WEFT_RETURN_IF_ERROR(CheckOptions(options));
  return std::unique_ptr<CharTransformer>(new CharTransformer(std::move(options)));
}

CharTransformer::CharTransformer(CharTransformerOptions options)
    : Model(Signature{{"tokens"}, {"logits"}}, "char_transformer"), options_(std::move(options)) {
  int64_t seed = options_.seed * 1000;
  auto normal = [&seed] { return Initializer::RandomNormal(0, 0.02, ++seed); };
  auto dense = [&](int64_t units, const std::string& activation, const std::string& name) {
    return std::make_unique<Dense>(units, activation,
                                   DenseOptions{.name = name, .kernel_initializer = normal()});
  };
  auto norm = [&](const std::string& name) {
    return std::make_unique<LayerNormalization>(
        LayerNormalizationOptions{.name = name, .epsilon = options_.layer_norm_epsilon});
  };
  tokens_ = std::make_unique<Embedding>(
      options_.vocabulary, options_.model_dim,
      EmbeddingOptions{.name = "token_embedding", .embeddings_initializer = normal()});
  positions_ = std::make_unique<PositionEmbedding>(
      options_.context,
      PositionEmbeddingOptions{.name = "position_embedding", .initializer = normal()});
  for (int64_t i = 0; i < options_.layers; ++i) {
    const std::string prefix = StrCat("block_", i, "/");
    Block block;
    block.attention_norm = norm(prefix + "attention_norm");
    block.attention = std::make_unique<MultiHeadAttention>(
        options_.heads, options_.model_dim / options_.heads,
        MultiHeadAttentionOptions{.name = prefix + "attention",
                                  .causal = true,
                                  .fused = options_.fused_attention,
                                  .kernel_initializer = normal()});
    block.mlp_norm = norm(prefix + "mlp_norm");
    block.mlp_in = dense(options_.mlp_dim, "gelu", prefix + "mlp_in");
    block.mlp_out = dense(options_.model_dim, "", prefix + "mlp_out");
    blocks_.push_back(std::move(block));
  }
  final_norm_ = norm("final_norm");
  head_ = dense(options_.vocabulary, "", "head");
  set_call([this](const Scope& scope, const std::vector<Output>& inputs) {
    return std::vector<Output>{Call(scope, inputs[0])};
  });
}

Output CharTransformer::Call(const Scope& scope, const Output& tokens) {
  Output x = (*tokens_)(scope, tokens);
  x = ops::Add(scope, x, (*positions_)(scope, x));
  for (Block& block : blocks_) {
    x = ops::Add(scope, x, (*block.attention)(scope, (*block.attention_norm)(scope, x)));
    x = ops::Add(scope, x,
                 (*block.mlp_out)(scope, (*block.mlp_in)(scope, (*block.mlp_norm)(scope, x))));
  }
  return (*head_)(scope, (*final_norm_)(scope, x));
}

StatusOr<CharTransformer::DecodeStep> CharTransformer::AddDecodeStep(int64_t new_positions) {
  if (new_positions <= 0 || new_positions > options_.context) {
    return InvalidArgument("a decoding step takes 1 to ", options_.context, " new positions, not ",
                           new_positions);
  }
  if (auto found = decode_steps_.find(new_positions); found != decode_steps_.end()) {
    return found->second;
  }
  DecodeStep step;
  WEFT_RETURN_IF_ERROR(AddToGraph([&](const Scope& root) -> Status {
    Scope scope = root.NewSubScope(StrCat("decode_", new_positions));
    step.tokens = ops::Placeholder(scope.WithOpName("tokens"), DataType::kInt32,
                                   PartialShape({-1, new_positions}));
    step.start = ops::Placeholder(scope.WithOpName("start"), DataType::kInt32, PartialShape({}));
    // The graph loses the length of a sum with cache-dependent parts; the Dense layers need it.
    const Tensor shape = Tensor::FromVector<int64_t>({-1, new_positions, options_.model_dim});
    Output x = (*tokens_)(scope, step.tokens);
    x = ops::Reshape(scope, ops::Add(scope, x, positions_->From(scope, x, step.start)), shape);
    const int64_t head_dim = options_.model_dim / options_.heads;
    for (size_t i = 0; i < blocks_.size(); ++i) {
      Block& block = blocks_[i];
      MultiHeadAttention::KeyValueCache cache;
      const PartialShape cached({-1, options_.heads, -1, head_dim});
      cache.keys =
          ops::Placeholder(scope.WithOpName(StrCat("past_keys_", i)), DataType::kFloat, cached);
      cache.values =
          ops::Placeholder(scope.WithOpName(StrCat("past_values_", i)), DataType::kFloat, cached);
      step.past_keys.push_back(cache.keys);
      step.past_values.push_back(cache.values);
      x = ops::Reshape(scope,
                       ops::Add(scope, x,
                                block.attention->AttendWithCache(
                                    scope, (*block.attention_norm)(scope, x), &cache)),
                       shape);
      x = ops::Add(scope, x,
                   (*block.mlp_out)(scope, (*block.mlp_in)(scope, (*block.mlp_norm)(scope, x))));
      step.keys.push_back(cache.keys);
      step.values.push_back(cache.values);
    }
    step.logits = (*head_)(scope, (*final_norm_)(scope, x));
    return scope.status();
  }));
  decode_steps_.emplace(new_positions, step);
  return step;
}

}  // namespace weft::train
