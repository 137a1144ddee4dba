// Metrics for Model::Compile, after the reference's (Keras) metrics of the same names. A Metric
// builds a batch's values (float32 [n]: one per example, or one per position for a score per
// position, such as a sequence model's per-token logits); the model keeps their running sum and
// count in sync-on-read SUM variables, so under a distribution strategy each replica adds its own
// slice's and a cross-replica read gives the whole epoch's mean over every value. Values;
// thread-compatible.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "weft/train/losses.h"

namespace weft::train {

class Metric {
 public:
  using Fn =
      std::function<Output(const Scope& scope, const Output& labels, const Output& predictions)>;

  Metric(std::string name, Fn fn, Loss::LabelCheck check_labels = nullptr)
      : name_(std::move(name)), fn_(std::move(fn)), check_labels_(std::move(check_labels)) {}

  const std::string& name() const { return name_; }
  // The same metric logged under another name.
  Metric Named(std::string name) const { return Metric(std::move(name), fn_, check_labels_); }
  // The batch's values, float32 [n]; errors go to `scope`.
  Output operator()(const Scope& scope, const Output& labels, const Output& predictions) const {
    return fn_(scope.NewSubScope(name_), labels, predictions);
  }
  // OK unless the metric refuses some of `labels` on the host (binary accuracy: outside [0, 1]).
  Status CheckLabels(const Tensor& labels) const {
    return check_labels_ ? check_labels_(labels) : Status::OK();
  }

 private:
  std::string name_;
  Fn fn_;
  Loss::LabelCheck check_labels_;
};

// The argmax of the predictions [batch, ..., classes] equals the class id label [batch, ...] (or
// [batch, ..., 1]): one value per position.
Metric SparseCategoricalAccuracy();
// The argmax of the predictions equals the argmax of the one-hot labels, per position.
Metric CategoricalAccuracy();
// predictions > threshold equals the label, per element (averaged over an example's); labels must
// be in [0, 1] (a batch holding another is refused before it is fed, naming the label).
Metric BinaryAccuracy(double threshold = 0.5);
// (labels - predictions)^2, averaged over each example's elements.
Metric MeanSquaredErrorMetric();

// The metric named `name`: "accuracy"/"acc" (the accuracy that fits `loss`, as in the reference:
// sparse categorical, categorical or binary), "sparse_categorical_accuracy",
// "categorical_accuracy", "binary_accuracy", "mean_squared_error"/"mse". A binary accuracy for a
// BinaryCrossentropy(from_logits = true) loss thresholds the logits at 0 (a probability of 0.5),
// else the predictions at 0.5. InvalidArgument naming an unknown name.
StatusOr<Metric> GetMetric(std::string_view name, const Loss& loss);

}  // namespace weft::train
