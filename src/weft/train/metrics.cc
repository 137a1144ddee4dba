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

Output ClassIds(const Scope& scope, const Output& labels) {
  Output ids = labels;
  const PartialShape& shape = labels.shape();
  if (shape.rank_known() && shape.rank() == 2 && shape.dim(1) == 1) {
    ids = ops::Reshape(scope, labels, {int64_t{-1}});
  }
  return ids.dtype() == DataType::kInt64 ? ids : ops::Cast(scope, ids, DataType::kInt64);
}

}  // namespace

Metric SparseCategoricalAccuracy() {
  return Metric("sparse_categorical_accuracy",
                [](const Scope& scope, const Output& labels, const Output& predictions) {
                  Output predicted = ops::ArgMax(scope, predictions, -1, DataType::kInt64);
                  return ToFloat(scope, ops::Equal(scope, predicted, ClassIds(scope, labels)));
                });
}

Metric CategoricalAccuracy() {
  return Metric("categorical_accuracy",
                [](const Scope& scope, const Output& labels, const Output& predictions) {
                  Output predicted = ops::ArgMax(scope, predictions, -1, DataType::kInt64);
                  Output expected = ops::ArgMax(scope, labels, -1, DataType::kInt64);
                  return ToFloat(scope, ops::Equal(scope, predicted, expected));
                });
}

Metric BinaryAccuracy(double threshold) {
  return Metric("binary_accuracy", [threshold](const Scope& scope, const Output& labels,
                                               const Output& predictions) {
    Output predicted = ToFloat(
        scope, ops::Greater(scope, predictions, ops::Const(scope, static_cast<float>(threshold))));
    return PerExample(scope, ToFloat(scope, ops::Equal(scope, predicted, ToFloat(scope, labels))));
  });
}

Metric MeanSquaredErrorMetric() {
  return Metric("mean_squared_error", [](const Scope& scope, const Output& labels,
                                         const Output& predictions) {
    return PerExample(scope,
                      ops::Square(scope, ops::Sub(scope, ToFloat(scope, labels), predictions)));
  });
}

StatusOr<Metric> GetMetric(std::string_view name, const Loss& loss) {
  // As in the reference, "accuracy" is the accuracy the loss implies, logged as "accuracy".
  if (name == "accuracy" || name == "acc") {
    const std::string logged(name);
    if (loss.name() == "binary_crossentropy") return BinaryAccuracy().Named(logged);
    if (loss.name() == "categorical_crossentropy") return CategoricalAccuracy().Named(logged);
    return SparseCategoricalAccuracy().Named(logged);
  }
  if (name == "sparse_categorical_accuracy") return SparseCategoricalAccuracy();
  if (name == "categorical_accuracy") return CategoricalAccuracy();
  if (name == "binary_accuracy") return BinaryAccuracy();
  if (name == "mean_squared_error" || name == "mse") return MeanSquaredErrorMetric();
  return InvalidArgument(
      "unknown metric '", name,
      "' (expected accuracy, sparse_categorical_accuracy, categorical_accuracy, ",
      "binary_accuracy or mean_squared_error)");
}

}  // namespace weft::train
