// Metrics for Model::Compile, after the reference's (Keras) metrics of the same names. A Metric
// builds the per-example values of a batch (float32 [batch]); the model keeps their running sum
// and count in sync-on-read SUM variables, so under a distribution strategy each replica adds its
// own slice's and a cross-replica read gives the whole epoch's mean. Values; thread-compatible.
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

  Metric(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}

  const std::string& name() const { return name_; }
  // The same metric logged under another name.
  Metric Named(std::string name) const { return Metric(std::move(name), fn_); }
  // Per-example values, float32 [batch]; errors go to `scope`.
  Output operator()(const Scope& scope, const Output& labels, const Output& predictions) const {
    return fn_(scope.NewSubScope(name_), labels, predictions);
  }

 private:
  std::string name_;
  Fn fn_;
};

// The argmax of the predictions [batch, classes] equals the class id label [batch] (or [batch, 1]).
Metric SparseCategoricalAccuracy();
// The argmax of the predictions equals the argmax of the one-hot labels.
Metric CategoricalAccuracy();
// predictions > threshold equals the {0, 1} label, per element (averaged over an example's).
Metric BinaryAccuracy(double threshold = 0.5);
// (labels - predictions)^2, averaged over each example's elements.
Metric MeanSquaredErrorMetric();

// The metric named `name`: "accuracy"/"acc" (the accuracy that fits `loss`, as in the reference:
// sparse categorical, categorical or binary), "sparse_categorical_accuracy",
// "categorical_accuracy", "binary_accuracy", "mean_squared_error"/"mse". InvalidArgument naming
// an unknown one.
StatusOr<Metric> GetMetric(std::string_view name, const Loss& loss);

}  // namespace weft::train
