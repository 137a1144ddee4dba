// The normalization layers, after the reference's (Keras) layers of the same names, both over the
// last dimension of the input (the channels of NHWC images, the features of [batch, features]).
// Not thread-safe (see layer.h).
#pragma once

#include <string>

#include "weft/train/layers/layer.h"

namespace weft::train {

struct BatchNormalizationOptions {
  std::string name{};  // "": "batch_normalization", ...
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // learn beta
  bool scale = true;   // learn gamma
};

// Training: normalizes with the batch's mean and (biased) variance over every dimension but the
// last, and moves moving_mean and moving_variance toward them by (1 - momentum) — update ops the
// model runs with each training step (LayerCallContext::AddUpdate). Inference: normalizes with
// the moving statistics. Both then scale by gamma and shift by beta.
// The moving statistics are sync-on-read variables with MEAN aggregation (as in the reference):
// under a distribution strategy each replica updates its own component from its own batch, and a
// cross-replica read (a checkpoint, Model's synchronization after each epoch) gives their mean.
class BatchNormalization final : public Layer {
 public:
  explicit BatchNormalization(BatchNormalizationOptions options = {});
  std::string_view type() const override { return "BatchNormalization"; }

 private:
  void Build(const Scope& scope, const PartialShape& input_shape) override;
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  BatchNormalizationOptions options_;
};

struct LayerNormalizationOptions {
  std::string name{};  // "": "layer_normalization", ...
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
};

// Normalizes each example over its last dimension (mean 0, variance 1), then scales by gamma and
// shifts by beta, both [last dimension]; the same in training and inference.
class LayerNormalization final : public Layer {
 public:
  explicit LayerNormalization(LayerNormalizationOptions options = {});
  std::string_view type() const override { return "LayerNormalization"; }

 private:
  void Build(const Scope& scope, const PartialShape& input_shape) override;
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  LayerNormalizationOptions options_;
};

}  // namespace weft::train
