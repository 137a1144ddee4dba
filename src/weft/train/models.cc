#include "weft/train/models.h"

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

constexpr int kImageSide = 28;
constexpr int kPixels = kImageSide * kImageSide;
constexpr int kClasses = 10;

// Creates variables with successive seeds so that every weight differs but the model repeats.
// A factory's failure is recorded in the scope, like any other building error.
class VariableMaker {
 public:
  VariableMaker(int64_t seed, const VariableFactory& factory, Model* model)
      : seed_(seed), factory_(factory), model_(model) {}

  Variable Weight(const Scope& scope, const TensorShape& shape) {
    return Make(scope, "kernel", shape, Initializer::GlorotUniform(seed_ * 1000 + ++count_));
  }
  Variable Bias(const Scope& scope, int64_t size) {
    return Make(scope, "bias", TensorShape({size}), Initializer::Zeros());
  }

 private:
  Variable Make(const Scope& scope, std::string_view name, const TensorShape& shape,
                const Initializer& initializer) {
    if (!factory_) {
      Variable variable = Variable::Create(scope, name, shape, DataType::kFloat, initializer);
      if (variable) {
        model_->variables.push_back(variable);
        model_->initializers.push_back(variable.initializer());
      }
      return variable;
    }
    if (!scope.ok()) return Variable();
    StatusOr<Variable> made = factory_(scope, name, shape, initializer);
    if (made.ok() && !*made) made = Internal("the variable factory returned no variable");
    if (!made.ok()) {
      scope.UpdateStatus(made.status().WithContext(StrCat("variable '", name, "'")));
      return Variable();
    }
    model_->variables.push_back(*made);
    return *made;
  }

  int64_t seed_;
  const VariableFactory& factory_;
  Model* model_;
  int64_t count_ = 0;
};

Output Dense(const Scope& scope, VariableMaker& maker, const Output& input, int64_t in, int64_t out,
             bool relu) {
  Variable kernel = maker.Weight(scope, TensorShape({in, out}));
  Variable bias = maker.Bias(scope, out);
  Output z = ops::BiasAdd(scope, ops::MatMul(scope, input, kernel.Read(scope)), bias.Read(scope));
  return relu ? ops::Relu(scope, z) : z;
}

Output ConvBlock(const Scope& scope, VariableMaker& maker, const Output& input, int64_t in,
                 int64_t out) {
  Variable kernel = maker.Weight(scope, TensorShape({5, 5, in, out}));
  Variable bias = maker.Bias(scope, out);
  Output conv = ops::Conv2D(scope, input, kernel.Read(scope), {1, 1, 1, 1}, "SAME");
  Output activated = ops::Relu(scope, ops::BiasAdd(scope, conv, bias.Read(scope)));
  return ops::MaxPool(scope, activated, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
}

}  // namespace

StatusOr<ModelKind> ParseModelKind(const std::string& name) {
  if (name == "mlp") return ModelKind::kMlp;
  if (name == "cnn") return ModelKind::kCnn;
  return InvalidArgument("unknown model '", name, "' (expected mlp or cnn)");
}

StatusOr<Model> BuildModel(const Scope& scope, ModelKind kind, int64_t seed,
                           const VariableFactory& factory) {
  Model model;
  VariableMaker maker(seed, factory, &model);
  model.images =
      ops::Placeholder(scope.WithOpName("images"), DataType::kFloat, PartialShape({-1, kPixels}));
  model.labels = ops::Placeholder(scope.WithOpName("labels"), DataType::kInt64, PartialShape({-1}));
  if (kind == ModelKind::kMlp) {
    Output hidden1 = Dense(scope.NewSubScope("dense1"), maker, model.images, kPixels, 256, true);
    Output hidden2 = Dense(scope.NewSubScope("dense2"), maker, hidden1, 256, 256, true);
    model.logits = Dense(scope.NewSubScope("logits"), maker, hidden2, 256, kClasses, false);
  } else {
    Output images = ops::Reshape(scope, model.images, {-1, kImageSide, kImageSide, 1});
    Output block1 = ConvBlock(scope.NewSubScope("conv1"), maker, images, 1, 32);
    Output block2 = ConvBlock(scope.NewSubScope("conv2"), maker, block1, 32, 64);
    constexpr int64_t kFlat = 7 * 7 * 64;
    Output flat = ops::Reshape(scope, block2, {int64_t{-1}, kFlat});
    Output hidden = Dense(scope.NewSubScope("dense"), maker, flat, kFlat, 1024, true);
    model.logits = Dense(scope.NewSubScope("logits"), maker, hidden, 1024, kClasses, false);
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
