#include "weft/train/models.h"

#include "weft/core/str_util.h"
#include "weft/distribute/replica_context.h"
#include "weft/train/layers/convolutional.h"
#include "weft/train/layers/core.h"

namespace weft::train {
namespace {

constexpr int kImageSide = 28;
constexpr int kPixels = kImageSide * kImageSide;
constexpr int kClasses = 10;

// Weight k of the model (from 1) draws from seed * 1000 + k, so that every weight differs but the
// model repeats for a seed.
Initializer Weight(int64_t seed, int k) { return Initializer::GlorotUniform(seed * 1000 + k); }

DenseOptions DenseNamed(std::string name, int64_t seed, int k) {
  DenseOptions options;
  options.name = std::move(name);
  options.kernel_initializer = Weight(seed, k);
  return options;
}

}  // namespace

StatusOr<ModelKind> ParseModelKind(const std::string& name) {
  if (name == "mlp") return ModelKind::kMlp;
  if (name == "cnn") return ModelKind::kCnn;
  if (name == "char_transformer") return ModelKind::kCharTransformer;
  return InvalidArgument("unknown model '", name, "' (expected mlp, cnn or char_transformer)");
}

std::vector<std::unique_ptr<Layer>> StandardLayers(ModelKind kind, int64_t seed,
                                                   int64_t mlp_width) {
  std::vector<std::unique_ptr<Layer>> layers;
  if (kind == ModelKind::kCharTransformer) return layers;
  if (kind == ModelKind::kMlp) {
    layers.push_back(std::make_unique<Dense>(mlp_width, "relu", DenseNamed("dense1", seed, 1)));
    layers.push_back(std::make_unique<Dense>(mlp_width, "relu", DenseNamed("dense2", seed, 2)));
    layers.push_back(std::make_unique<Dense>(kClasses, "", DenseNamed("logits", seed, 3)));
    return layers;
  }
  auto conv = [seed](std::string name, int64_t filters, int k) {
    Conv2DOptions options;
    options.name = std::move(name);
    options.padding = "same";
    options.kernel_initializer = Weight(seed, k);
    return std::make_unique<Conv2D>(filters, 5, "relu", std::move(options));
  };
  PoolingOptions same;
  same.padding = "same";
  layers.push_back(std::make_unique<Reshape>(std::vector<int64_t>{kImageSide, kImageSide, 1}));
  layers.push_back(conv("conv1", 32, 1));
  layers.push_back(std::make_unique<MaxPooling2D>(2, same));
  layers.push_back(conv("conv2", 64, 2));
  layers.push_back(std::make_unique<MaxPooling2D>(2, same));
  layers.push_back(std::make_unique<Flatten>());
  layers.push_back(std::make_unique<Dense>(1024, "relu", DenseNamed("dense", seed, 3)));
  layers.push_back(std::make_unique<Dense>(kClasses, "", DenseNamed("logits", seed, 4)));
  return layers;
}

StatusOr<BuiltModel> BuildModel(const Scope& scope, ModelKind kind, int64_t seed,
                                const VariableFactory& factory) {
  if (kind == ModelKind::kCharTransformer) {
    return InvalidArgument("BuildModel builds the image models; char_transformer is a Model of ",
                           "its own (CharTransformer)");
  }
  BuiltModel model;
  // A factory makes every variable the layers create, as the innermost variable creator.
  std::optional<VariableCreatorScope> creator;
  if (factory) {
    creator.emplace([&](const Scope& s, std::string_view name, const TensorShape& shape, DataType,
                        const Initializer& initializer, const VariableOptions&) {
      if (!s.ok()) return Variable();
      StatusOr<Variable> made = factory(s, name, shape, initializer);
      if (made.ok() && !*made) made = Internal("the variable factory returned no variable");
      if (!made.ok()) {
        s.UpdateStatus(made.status().WithContext(StrCat("variable '", name, "'")));
        return Variable();
      }
      return *made;
    });
  }
  model.images =
      ops::Placeholder(scope.WithOpName("images"), DataType::kFloat, PartialShape({-1, kPixels}));
  model.labels = ops::Placeholder(scope.WithOpName("labels"), DataType::kInt64, PartialShape({-1}));
  std::vector<std::unique_ptr<Layer>> layers = StandardLayers(kind, seed);
  Output x = model.images;
  for (const std::unique_ptr<Layer>& layer : layers) x = (*layer)(scope, x);
  model.logits = x;
  const distribute::ReplicaContext* context = distribute::CurrentReplicaContext();
  const int replica = context == nullptr ? 0 : context->replica_id();
  for (const std::unique_ptr<Layer>& layer : layers) {
    for (const Variable& variable : layer->VariablesIn(scope.graph(), replica, false)) {
      model.variables.push_back(variable);
      if (!factory) model.initializers.push_back(variable.initializer());
    }
  }
  Scope loss_scope = scope.NewSubScope("loss");
  auto cross_entropy =
      ops::SparseSoftmaxCrossEntropyWithLogits(loss_scope, model.logits, model.labels);
  model.loss = ops::Mean(loss_scope.WithOpName("mean"), cross_entropy.loss, 0);
  Scope metric_scope = scope.NewSubScope("metrics");
  Output predicted = ops::ArgMax(metric_scope, model.logits, 1, DataType::kInt64);
  model.correct = ops::Sum(
      metric_scope.WithOpName("correct"),
      ops::Cast(metric_scope, ops::Equal(metric_scope, predicted, model.labels), DataType::kInt64),
      0);
  WEFT_RETURN_IF_ERROR(scope.status());
  return model;
}

}  // namespace weft::train
