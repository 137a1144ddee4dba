#include "weft/train/metrics.h"

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

Output ToFloat(const Scope& scope, const Output& x) {
  return x.dtype() == DataType::kFloat ? x : ops::Cast(scope, x, DataType::kFloat);
}

// Per-example mean over every dimension but the first ([batch] stays as it is).
Output PerExample(const Scope& scope, const Output& values) {
  const PartialShape& shape = values.shape();
  if (shape.rank_known() && shape.rank() == 1) return values;
  // [batch, -1] from the runtime batch size, then the mean of each row.
  Output batch = ops::Slice(scope, ops::Shape(scope, values, DataType::kInt64),
                            ops::Const(scope, Tensor::FromVector<int64_t>({0})),
                            ops::Const(scope, Tensor::FromVector<int64_t>({1})));
  Output flat = ops::Reshape(
      scope, values,
      ops::Concat(scope, {batch, ops::Const(scope, Tensor::FromVector<int64_t>({-1}))}, 0));
  return ops::Mean(scope, flat, 1);
}

// Every value of `values` as a vector [n] (n: the positions of every example).
Output Flat(const Scope& scope, const Output& values) {
  return ops::Reshape(scope, values, {int64_t{-1}});
}

}  // namespace

Metric SparseCategoricalAccuracy() {
  return Metric("sparse_categorical_accuracy", [](const Scope& scope, const Output& labels,
                                                  const Output& predictions) {
    Output predicted = Flat(scope, ops::ArgMax(scope, predictions, -1, DataType::kInt64));
    Output ids = Flat(scope, labels);
    if (ids.dtype() != DataType::kInt64) ids = ops::Cast(scope, ids, DataType::kInt64);
    return ToFloat(scope, ops::Equal(scope, predicted, ids));
  });
}

Metric CategoricalAccuracy() {
  return Metric("categorical_accuracy",
                [](const Scope& scope, const Output& labels, const Output& predictions) {
                  Output predicted = ops::ArgMax(scope, predictions, -1, DataType::kInt64);
                  Output expected = ops::ArgMax(scope, labels, -1, DataType::kInt64);
                  return ToFloat(scope, Flat(scope, ops::Equal(scope, predicted, expected)));
                });
}

Metric BinaryAccuracy(double threshold) {
  return Metric(
      "binary_accuracy",
      [threshold](const Scope& scope, const Output& labels, const Output& predictions) {
        Output predicted = ToFloat(
            scope,
            ops::Greater(scope, predictions, ops::Const(scope, static_cast<float>(threshold))));
        return PerExample(scope,
                          ToFloat(scope, ops::Equal(scope, predicted, ToFloat(scope, labels))));
      },
      [](const Tensor& labels) { return CheckBinaryLabels("binary_accuracy", labels); });
}

Metric MeanSquaredErrorMetric() {
  return Metric("mean_squared_error", [](const Scope& scope, const Output& labels,
                                         const Output& predictions) {
    return PerExample(scope,
                      ops::Square(scope, ops::Sub(scope, ToFloat(scope, labels), predictions)));
  });
}

namespace {

// Logits are thresholded at 0, the logit of a probability of 0.5.
Metric BinaryAccuracyFor(const Loss& loss) {
  const bool logits = loss.name() == "binary_crossentropy" && loss.from_logits();
  return BinaryAccuracy(logits ? 0.0 : 0.5);
}

}  // namespace

StatusOr<Metric> GetMetric(std::string_view name, const Loss& loss) {
  // As in the reference, "accuracy" is the accuracy the loss implies, logged as "accuracy".
  if (name == "accuracy" || name == "acc") {
    const std::string logged(name);
    if (loss.name() == "binary_crossentropy") return BinaryAccuracyFor(loss).Named(logged);
    if (loss.name() == "categorical_crossentropy") return CategoricalAccuracy().Named(logged);
    return SparseCategoricalAccuracy().Named(logged);
  }
  if (name == "sparse_categorical_accuracy") return SparseCategoricalAccuracy();
  if (name == "categorical_accuracy") return CategoricalAccuracy();
  if (name == "binary_accuracy") return BinaryAccuracyFor(loss);
  if (name == "mean_squared_error" || name == "mse") return MeanSquaredErrorMetric();
  return InvalidArgument(
      "unknown metric '", name,
      "' (expected accuracy, sparse_categorical_accuracy, categorical_accuracy, ",
      "binary_accuracy or mean_squared_error)");
}

}  // namespace weft::train
