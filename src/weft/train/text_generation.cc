#include "weft/train/text_generation.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "weft/checkpoint/checkpoint_index.h"
#include "weft/runtime/session.h"

namespace weft::train {
namespace {

Status CheckOptions(const CharTransformer& model, std::string_view prompt,
                    const GenerateOptions& options) {
  if (prompt.empty()) return InvalidArgument("generate: the prompt is empty");
  if (!(options.temperature > 0) || !std::isfinite(options.temperature)) {
    return InvalidArgument("generate: temperature must be positive, got ", options.temperature);
  }
  if (options.top_k < 0 || options.tokens < 0) {
    return InvalidArgument("generate: top_k (", options.top_k, ") and tokens (", options.tokens,
                           ") must not be negative");
  }
  const int64_t context = model.options().context;
  if (static_cast<int64_t>(prompt.size()) + options.tokens > context) {
    return InvalidArgument("generate: a prompt of ", prompt.size(), " bytes and ", options.tokens,
                           " tokens need ", static_cast<int64_t>(prompt.size()) + options.tokens,
                           " positions, more than the model's context of ", context);
  }
  return Status::OK();
}

// A byte drawn from row `row` of logits [1, positions, vocabulary].
int32_t Sample(const Tensor& logits, int64_t row, const GenerateOptions& options,
               std::mt19937_64& generator) {
  const int64_t vocabulary = logits.dim_size(2);
  const float* scores = logits.data<float>() + row * vocabulary;
  std::vector<int32_t> order(vocabulary);
  std::iota(order.begin(), order.end(), 0);
  int64_t kept = vocabulary;
  if (options.top_k > 0 && options.top_k < vocabulary) {
    kept = options.top_k;
    std::partial_sort(order.begin(), order.begin() + kept, order.end(),
                      [scores](int32_t a, int32_t b) { return scores[a] > scores[b]; });
  }
  double max = -INFINITY;
  for (int64_t i = 0; i < kept; ++i) max = std::max<double>(max, scores[order[i]]);
  std::vector<double> weights(kept);
  for (int64_t i = 0; i < kept; ++i) {
    weights[i] = std::exp((scores[order[i]] - max) / options.temperature);
  }
  std::discrete_distribution<int64_t> draw(weights.begin(), weights.end());
  return order[draw(generator)];
}

}  // namespace

StatusOr<std::unique_ptr<CharTransformer>> LoadCharTransformer(const std::string& checkpoint_dir) {
  WEFT_ASSIGN_OR_RETURN(std::optional<checkpoint::CheckpointIndex> index,
                        checkpoint::ReadCheckpointIndex(checkpoint_dir));
  if (!index.has_value() || index->latest.empty()) {
    return NotFound("no checkpoint in ", checkpoint_dir, " (no ", checkpoint::kCheckpointIndexName,
                    " naming one)");
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<CharTransformer> model, CharTransformer::Create({}));
  // Inference needs no optimizer, but Compile wants one: the plainest.
  WEFT_RETURN_IF_ERROR(model->Compile(NewGradientDescentOptimizer(0),
                                      SparseCategoricalCrossentropy(/*from_logits=*/true)));
  WEFT_RETURN_IF_ERROR(model->LoadWeights(checkpoint_dir + "/" + index->latest));
  WEFT_RETURN_IF_ERROR(
      model->Build(InputSpec{PartialShape({model->options().context}), DataType::kInt32}));
  return model;
}

StatusOr<std::string> Generate(CharTransformer& model, std::string_view prompt,
                               const GenerateOptions& options) {
  WEFT_RETURN_IF_ERROR(CheckOptions(model, prompt, options));
  if (model.session() == nullptr) {
    return FailedPrecondition("generate: model '", model.name(), "' is not built");
  }
  const auto prompt_length = static_cast<int64_t>(prompt.size());
  WEFT_ASSIGN_OR_RETURN(CharTransformer::DecodeStep first, model.AddDecodeStep(prompt_length));
  WEFT_ASSIGN_OR_RETURN(CharTransformer::DecodeStep next, model.AddDecodeStep(1));
  const CharTransformerOptions& shape = model.options();
  // The cache starts empty: no past positions.
  std::vector<Tensor> keys(
      shape.layers,
      Tensor(DataType::kFloat, TensorShape({1, shape.heads, 0, shape.model_dim / shape.heads})));
  std::vector<Tensor> values = keys;
  Tensor tokens(DataType::kInt32, TensorShape({1, prompt_length}));
  for (int64_t i = 0; i < prompt_length; ++i) {
    tokens.data<int32_t>()[i] = static_cast<unsigned char>(prompt[i]);
  }
  std::mt19937_64 generator(options.seed);
  std::string text;
  int64_t position = 0;
  for (int64_t drawn = 0; drawn < options.tokens; ++drawn) {
    const CharTransformer::DecodeStep& step = drawn == 0 ? first : next;
    NamedTensorList feeds = {{step.tokens.name(), tokens},
                             {step.start.name(), Tensor::Scalar(static_cast<int32_t>(position))}};
    std::vector<std::string> fetches = {step.logits.name()};
    for (int64_t l = 0; l < shape.layers; ++l) {
      feeds.emplace_back(step.past_keys[l].name(), keys[l]);
      feeds.emplace_back(step.past_values[l].name(), values[l]);
      fetches.push_back(step.keys[l].name());
      fetches.push_back(step.values[l].name());
    }
    std::vector<Tensor> outputs;
    WEFT_RETURN_IF_ERROR(model.session()->Run(feeds, fetches, {}, &outputs));
    for (int64_t l = 0; l < shape.layers; ++l) {
      keys[l] = outputs[1 + 2 * l];
      values[l] = outputs[2 + 2 * l];
    }
    position += tokens.dim_size(1);
    const int32_t byte = Sample(outputs[0], tokens.dim_size(1) - 1, options, generator);
    text.push_back(static_cast<char>(byte));
    tokens = Tensor(DataType::kInt32, TensorShape({1, 1}));
    tokens.data<int32_t>()[0] = byte;
  }
  return text;
}

}  // namespace weft::train
