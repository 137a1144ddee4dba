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

}  // namespace

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
  return Loss("sparse_categorical_crossentropy",
              [from_logits](const Scope& scope, const Output& labels, const Output& predictions) {
                const PartialShape& shape = labels.shape();
                Output ids = labels;
                if (shape.rank_known() && shape.rank() == 2 && shape.dim(1) == 1) {
                  ids = ops::Reshape(scope, labels, {int64_t{-1}});
                } else if (!shape.rank_known() || shape.rank() != 1) {
                  scope.UpdateStatus(InvalidArgument(
                      "sparse_categorical_crossentropy: labels must be class ids [batch] or ",
                      "[batch, 1], got ", shape.DebugString()));
                  return Output();
                }
                if (ids.dtype() != DataType::kInt64) ids = ops::Cast(scope, ids, DataType::kInt64);
                // From probabilities p, log(p) are logits whose softmax is p again.
                Output logits =
                    from_logits ? predictions : ops::Log(scope, Clip(scope, predictions));
                auto cross_entropy = ops::SparseSoftmaxCrossEntropyWithLogits(scope, logits, ids);
                return ops::Mean(scope.WithOpName("value"), cross_entropy.loss, 0);
              });
}

Loss CategoricalCrossentropy(bool from_logits) {
  return Loss("categorical_crossentropy", [from_logits](const Scope& scope, const Output& labels,
                                                        const Output& predictions) {
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
    Output per_example = ops::Neg(
        scope, ops::Sum(scope, ops::Mul(scope, AsFloat(scope, labels), log_probabilities), -1));
    return ops::Mean(scope.WithOpName("value"), per_example, 0);
  });
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
  return Loss("binary_crossentropy", [from_logits](const Scope& scope, const Output& labels,
                                                   const Output& predictions) {
    CheckSameShape(scope, "binary_crossentropy", labels, predictions);
    Output z = AsFloat(scope, labels);
    Output elementwise;
    if (from_logits) {
      // max(x, 0) - x z + log(1 + exp(-|x|)): no overflow for large |x|.
      const Output& x = predictions;
      elementwise = ops::Add(
          scope, ops::Sub(scope, ops::Maximum(scope, x, Scalar(scope, 0)), ops::Mul(scope, x, z)),
          ops::Log1p(scope, ops::Exp(scope, ops::Neg(scope, ops::Abs(scope, x)))));
    } else {
      Output p = Clip(scope, predictions);
      Output one = Scalar(scope, 1);
      elementwise = ops::Neg(scope, ops::Add(scope, ops::Mul(scope, z, ops::Log(scope, p)),
                                             ops::Mul(scope, ops::Sub(scope, one, z),
                                                      ops::Log(scope, ops::Sub(scope, one, p)))));
    }
    return MeanOfAll(scope, elementwise);
  });
}

}  // namespace weft::train
