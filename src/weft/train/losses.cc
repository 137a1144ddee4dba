#include "weft/train/losses.h"

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

constexpr float kEpsilon = 1e-7f;

Output Scalar(const Scope& scope, float value) { return ops::Const(scope, value); }

Output Clip(const Scope& scope, const Output& probabilities) {
  return ops::Minimum(scope, ops::Maximum(scope, probabilities, Scalar(scope, kEpsilon)),
                      Scalar(scope, 1 - kEpsilon));
}

// Mean over every element (a scalar).
Output MeanOfAll(const Scope& scope, const Output& values) {
  return ops::Mean(scope.WithOpName("value"), ops::Reshape(scope, values, {int64_t{-1}}), 0);
}

bool SameKnownRank(const Output& a, const Output& b) {
  return a.shape().rank_known() && b.shape().rank_known() && a.shape().rank() == b.shape().rank();
}

void CheckSameShape(const Scope& scope, std::string_view loss, const Output& labels,
                    const Output& predictions) {
  if (!scope.ok()) return;
  if (!SameKnownRank(labels, predictions) || !labels.shape().Merge(predictions.shape()).ok()) {
    scope.UpdateStatus(InvalidArgument(loss, ": labels ", labels.shape().DebugString(),
                                       " and predictions ", predictions.shape().DebugString(),
                                       " must have the same shape"));
  }
}

Output AsFloat(const Scope& scope, const Output& labels) {
  return labels.dtype() == DataType::kFloat ? labels : ops::Cast(scope, labels, DataType::kFloat);
}

// Class scores [batch, ..., classes] as [n, classes], n counting every position of every example;
// an error naming `loss` goes to `scope` unless the rank is known and at least 2.
Output FlatClassScores(const Scope& scope, std::string_view loss, const Output& predictions) {
  const PartialShape& shape = predictions.shape();
  if (!shape.rank_known() || shape.rank() < 2) {
    scope.UpdateStatus(
        InvalidArgument(loss, ": predictions must be class scores [batch, ..., classes], got ",
                        shape.DebugString()));
    return Output();
  }
  if (shape.rank() == 2) return predictions;
  const int64_t classes = shape.dim(shape.rank() - 1);
  if (classes >= 0) return ops::Reshape(scope, predictions, {int64_t{-1}, classes});
  Output last = ops::Slice(scope, ops::Shape(scope, predictions), {shape.rank() - 1}, {1});
  return ops::Reshape(
      scope, predictions,
      ops::Concat(scope, {ops::Const(scope, Tensor::FromVector<int32_t>({-1})), last}, 0));
}

// Whether `labels` are class ids for `predictions` [batch, d1, ..., dk, classes]: shaped
// [batch, d1, ..., dk] or [batch, d1, ..., dk, 1], the known dimensions agreeing. Records an
// error naming `what` in `scope` otherwise.
bool CheckClassIds(const Scope& scope, std::string_view what, const Output& labels,
                   const Output& predictions) {
  const PartialShape& ids = labels.shape();
  const PartialShape& scores = predictions.shape();
  const int positions = scores.rank() - 1;  // the dimensions before the classes
  bool fits = ids.rank_known() &&
              (ids.rank() == positions || (ids.rank() == positions + 1 && ids.dim(positions) == 1));
  for (int i = 1; fits && i < positions; ++i) {
    fits = ids.dim(i) < 0 || scores.dim(i) < 0 || ids.dim(i) == scores.dim(i);
  }
  if (fits) return true;
  const std::string expected = positions == 1 ? "[batch] or [batch, 1]"
                                              : "shaped like the predictions without their last "
                                                "dimension (or with it 1)";
  scope.UpdateStatus(InvalidArgument(what, ": labels must be class ids ", expected,
                                     " for predictions ", scores.DebugString(), ", got ",
                                     ids.DebugString()));
  return false;
}

}  // namespace

Status CheckBinaryLabels(std::string_view what, const Tensor& labels) {
  Status status;
  VisitNumericType(labels.dtype(), [&]<typename T>() {
    const T* values = labels.data<T>();
    for (int64_t i = 0; i < labels.NumElements(); ++i) {
      const auto value = static_cast<double>(values[i]);
      if (value >= 0 && value <= 1) continue;  // NaN fails both
      status = InvalidArgument(what, ": label ", value, " (element ", i,
                               " of the batch's labels) is outside [0, 1]");
      return;
    }
  });
  return status;
}

Output Loss::operator()(const Scope& scope, const Output& labels, const Output& predictions) const {
  if (!scope.ok()) return Output();
  if (!fn_) {
    scope.UpdateStatus(InvalidArgument("no loss was given"));
    return Output();
  }
  if (!labels || !predictions) {
    scope.UpdateStatus(InvalidArgument(name_, ": the labels or the predictions are missing"));
    return Output();
  }
  return fn_(scope.NewSubScope(name_), labels, predictions);
}

Loss SparseCategoricalCrossentropy(bool from_logits) {
  return Loss(
      "sparse_categorical_crossentropy",
      [from_logits](const Scope& scope, const Output& labels, const Output& predictions) {
        constexpr std::string_view kName = "sparse_categorical_crossentropy";
        Output scores = FlatClassScores(scope, kName, predictions);
        if (!scores || !CheckClassIds(scope, kName, labels, predictions)) return Output();
        Output ids = ops::Reshape(scope, labels, {int64_t{-1}});
        if (ids.dtype() != DataType::kInt64) ids = ops::Cast(scope, ids, DataType::kInt64);
        // From probabilities p, log(p) are logits whose softmax is p again.
        Output logits = from_logits ? scores : ops::Log(scope, Clip(scope, scores));
        auto cross_entropy = ops::SparseSoftmaxCrossEntropyWithLogits(scope, logits, ids);
        return ops::Mean(scope.WithOpName("value"), cross_entropy.loss, 0);
      },
      from_logits);
}

Loss CategoricalCrossentropy(bool from_logits) {
  return Loss(
      "categorical_crossentropy",
      [from_logits](const Scope& scope, const Output& labels, const Output& predictions) {
        CheckSameShape(scope, "categorical_crossentropy", labels, predictions);
        Output log_probabilities;
        if (from_logits) {
          log_probabilities = ops::LogSoftmax(scope, predictions);
        } else {
          ops::ReductionAttrs keep;
          keep.keep_dims = true;
          Output normalized = ops::Div(scope, predictions, ops::Sum(scope, predictions, -1, keep));
          log_probabilities = ops::Log(scope, Clip(scope, normalized));
        }
        // [batch, ...]: one cross-entropy per position, then their mean.
        Output per_position = ops::Neg(
            scope, ops::Sum(scope, ops::Mul(scope, AsFloat(scope, labels), log_probabilities), -1));
        return MeanOfAll(scope, per_position);
      },
      from_logits);
}

Loss MeanSquaredError() {
  return Loss("mean_squared_error", [](const Scope& scope, const Output& labels,
                                       const Output& predictions) {
    CheckSameShape(scope, "mean_squared_error", labels, predictions);
    return MeanOfAll(scope,
                     ops::Square(scope, ops::Sub(scope, AsFloat(scope, labels), predictions)));
  });
}

Loss BinaryCrossentropy(bool from_logits) {
  return Loss(
      "binary_crossentropy",
      [from_logits](const Scope& scope, const Output& labels, const Output& predictions) {
        CheckSameShape(scope, "binary_crossentropy", labels, predictions);
        Output z = AsFloat(scope, labels);
        Output elementwise;
        if (from_logits) {
          // max(x, 0) - x z + log(1 + exp(-|x|)): no overflow for large |x|.
          const Output& x = predictions;
          elementwise = ops::Add(
              scope,
              ops::Sub(scope, ops::Maximum(scope, x, Scalar(scope, 0)), ops::Mul(scope, x, z)),
              ops::Log1p(scope, ops::Exp(scope, ops::Neg(scope, ops::Abs(scope, x)))));
        } else {
          Output p = Clip(scope, predictions);
          Output one = Scalar(scope, 1);
          elementwise =
              ops::Neg(scope, ops::Add(scope, ops::Mul(scope, z, ops::Log(scope, p)),
                                       ops::Mul(scope, ops::Sub(scope, one, z),
                                                ops::Log(scope, ops::Sub(scope, one, p)))));
        }
        return MeanOfAll(scope, elementwise);
      },
      from_logits,
      [](const Tensor& labels) { return CheckBinaryLabels("binary_crossentropy", labels); });
}

}  // namespace weft::train
