// Losses for Model::Compile, after the reference's (Keras) losses of the same names. A Loss builds,
// from a batch's labels and the model's predictions, the mean loss over the batch (a float32
// scalar). Under a distribution strategy each replica computes it on its own slice and the
// optimizer averages the replicas' gradients, which equals the gradient of the global batch's
// mean when the slices are equal. Values; thread-compatible.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "weft/graph/builder/ops.h"

namespace weft::train {

class Loss {
 public:
  using Fn =
      std::function<Output(const Scope& scope, const Output& labels, const Output& predictions)>;
  // Checks a batch's labels on the host before they are fed (a Status naming the first label at
  // fault); null: any labels.
  using LabelCheck = std::function<Status(const Tensor& labels)>;

  Loss() = default;
  Loss(std::string name, Fn fn, bool from_logits = false, LabelCheck check_labels = nullptr)
      : name_(std::move(name)),
        fn_(std::move(fn)),
        from_logits_(from_logits),
        check_labels_(std::move(check_labels)) {}

  // "sparse_categorical_crossentropy", ...
  const std::string& name() const { return name_; }
  // Whether the predictions are logits (scores before a softmax or sigmoid); GetMetric picks the
  // accuracy that fits them.
  bool from_logits() const { return from_logits_; }
  explicit operator bool() const { return static_cast<bool>(fn_); }
  // The mean loss over the batch; errors (mismatched shapes or dtypes) go to `scope`.
  Output operator()(const Scope& scope, const Output& labels, const Output& predictions) const;
  // OK unless the loss refuses some of `labels` (BinaryCrossentropy: a label outside [0, 1]).
  Status CheckLabels(const Tensor& labels) const {
    return check_labels_ ? check_labels_(labels) : Status::OK();
  }

 private:
  std::string name_;
  Fn fn_;
  bool from_logits_ = false;
  LabelCheck check_labels_;
};

// InvalidArgument naming `what`, the first label outside [0, 1] (or NaN) and its position in the
// batch's labels; OK when every label is in range.
Status CheckBinaryLabels(std::string_view what, const Tensor& labels);

// Integer class ids against class scores: labels [batch] (or [batch, 1]) against predictions
// [batch, classes], or, for a score per position (a sequence model's per-token logits), labels
// [batch, d1, ..., dk] (or [batch, d1, ..., dk, 1]) against [batch, d1, ..., dk, classes]; the
// loss is the mean over every position of every example, as the reference's. The scores are
// logits when `from_logits`, else probabilities (clipped to [1e-7, 1 - 1e-7] before the log).
Loss SparseCategoricalCrossentropy(bool from_logits = false);
// One-hot (or soft) labels against scores of the same shape, [batch, ..., classes]: the mean over
// every position.
Loss CategoricalCrossentropy(bool from_logits = false);
// mean((labels - predictions)^2) over every element.
Loss MeanSquaredError();
// Labels in [0, 1] (usually {0, 1}) against one score per element: a logit when `from_logits`,
// else a probability (clipped as above). A batch holding a label outside [0, 1] is refused before
// it is fed (Fit and Evaluate fail naming the label, the batch and the step).
Loss BinaryCrossentropy(bool from_logits = false);

}  // namespace weft::train
