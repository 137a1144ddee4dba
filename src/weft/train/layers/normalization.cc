#include "weft/train/layers/normalization.h"

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

// The size of the last dimension, or -1 when the rank or that dimension is unknown (or rank < 2).
int64_t Channels(const PartialShape& shape) {
  if (!shape.rank_known() || shape.rank() < 2) return -1;
  return shape.dim(shape.rank() - 1);
}

Output Scalar(const Scope& scope, double value) {
  return ops::Const(scope, static_cast<float>(value));
}

// centered * gamma / sqrt(variance + epsilon) + beta (centered = x - mean), with gamma and beta
// optional.
Output Normalize(const Scope& scope, const Output& centered, const Output& variance, double epsilon,
                 const Output& gamma, const Output& beta) {
  Output inverse = ops::Rsqrt(scope, ops::Add(scope, variance, Scalar(scope, epsilon)));
  Output factor = gamma ? ops::Mul(scope, inverse, gamma) : inverse;
  Output normalized = ops::Mul(scope, centered, factor);
  return beta ? ops::Add(scope, normalized, beta) : normalized;
}

}  // namespace

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : Layer("batch_normalization", options.name), options_(std::move(options)) {}

void BatchNormalization::Build(const Scope& scope, const PartialShape& input_shape) {
  if (!(options_.momentum >= 0 && options_.momentum <= 1) || !(options_.epsilon > 0)) {
    return Fail(scope, StrCat("momentum must be in [0, 1] and epsilon positive, got ",
                              options_.momentum, " and ", options_.epsilon));
  }
  const int64_t channels = Channels(input_shape);
  if (channels < 0) {
    return Fail(scope, StrCat("needs an input of rank >= 2 with a known last dimension, got ",
                              input_shape.DebugString()));
  }
  const TensorShape shape({channels});
  if (options_.scale) AddWeight(scope, "gamma", shape, Initializer::Ones());
  if (options_.center) AddWeight(scope, "beta", shape, Initializer::Zeros());
  VariableOptions on_read;
  on_read.synchronization = VariableSynchronization::kOnRead;
  on_read.aggregation = VariableAggregation::kMean;
  AddWeight(scope, "moving_mean", shape, Initializer::Zeros(), /*trainable=*/false, on_read);
  AddWeight(scope, "moving_variance", shape, Initializer::Ones(), /*trainable=*/false, on_read);
}

Output BatchNormalization::Forward(const Scope& scope, const Output& input, bool training,
                                   const std::vector<Variable>& weights) {
  const int64_t channels = weights.back().shape().dim_size(0);
  if (Channels(input.shape()) != channels) {
    Fail(scope,
         StrCat("was built for inputs [..., ", channels, "], got ", input.shape().DebugString()));
    return Output();
  }
  size_t next = 0;
  Output gamma = options_.scale ? weights[next++].Read(scope) : Output();
  Output beta = options_.center ? weights[next++].Read(scope) : Output();
  const Variable& moving_mean = weights[next];
  const Variable& moving_variance = weights[next + 1];
  if (!training) {
    return Normalize(scope, ops::Sub(scope, input, moving_mean.Read(scope)),
                     moving_variance.Read(scope), options_.epsilon, gamma, beta);
  }
  std::vector<int32_t> axes;
  for (int i = 0; i + 1 < input.shape().rank(); ++i) axes.push_back(i);
  Output axes_tensor = ops::Const(scope, Tensor::FromVector(axes));
  Output mean = ops::Mean(scope, input, axes_tensor);
  Output centered = ops::Sub(scope, input, mean);
  Output variance = ops::Mean(scope, ops::Square(scope, centered), axes_tensor);
  Output output = Normalize(scope, centered, variance, options_.epsilon, gamma, beta);
  // moving -= (moving - batch) * (1 - momentum), from this replica's batch.
  Scope update_scope = scope.NewSubScope("update");
  const Output decay = Scalar(update_scope, 1 - options_.momentum);
  auto update = [&](const Variable& moving, const Output& batch) {
    Output delta = ops::Mul(
        update_scope,
        ops::Sub(update_scope, moving.Read(update_scope), ops::StopGradient(update_scope, batch)),
        decay);
    return moving.AssignSub(update_scope, delta);
  };
  if (LayerCallContext* context = LayerCallContext::Current()) {
    context->AddUpdate(update(moving_mean, mean));
    context->AddUpdate(update(moving_variance, variance));
  }
  return output;
}

LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : Layer("layer_normalization", options.name), options_(std::move(options)) {}

void LayerNormalization::Build(const Scope& scope, const PartialShape& input_shape) {
  if (!(options_.epsilon > 0)) {
    return Fail(scope, StrCat("epsilon must be positive, got ", options_.epsilon));
  }
  const int64_t features = Channels(input_shape);
  if (features < 0) {
    return Fail(scope, StrCat("needs an input of rank >= 2 with a known last dimension, got ",
                              input_shape.DebugString()));
  }
  if (options_.scale) AddWeight(scope, "gamma", TensorShape({features}), Initializer::Ones());
  if (options_.center) AddWeight(scope, "beta", TensorShape({features}), Initializer::Zeros());
}

Output LayerNormalization::Forward(const Scope& scope, const Output& input, bool /*training*/,
                                   const std::vector<Variable>& weights) {
  if (Channels(input.shape()) < 0) {
    Fail(scope, StrCat("needs an input of rank >= 2 with a known last dimension, got ",
                       input.shape().DebugString()));
    return Output();
  }
  // One op for the row statistics, the normalisation, scale and offset, forward and back (a
  // dozen element-wise ops and reductions each way when composed); a layer without a scale or an
  // offset gives it ones or zeros.
  const int64_t channels = Channels(input.shape());
  size_t next = 0;
  auto filled = [&](float value) {
    return ops::Const(scope, Tensor::FromVector<float>(std::vector<float>(channels, value)));
  };
  Output gamma = options_.scale ? weights[next++].Read(scope) : filled(1.0f);
  Output beta = options_.center ? weights[next++].Read(scope) : filled(0.0f);
  return ops::FusedLayerNorm(scope, input, gamma, beta, static_cast<float>(options_.epsilon)).y;
}

}  // namespace weft::train
