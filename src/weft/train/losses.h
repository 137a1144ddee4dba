// Losses for Model::Compile, after the reference's (Keras) losses of the same names. A Loss builds,
// from a batch's labels and the model's predictions, the mean loss over the batch (a float32
// scalar). Under a distribution strategy each replica computes it on its own slice and the
// optimizer averages the replicas' gradients, which equals the gradient of the global batch's
// mean when the slices are equal. Values; thread-compatible.
#pragma once

#include <functional>
#include <string>

#include "weft/graph/builder/ops.h"

namespace weft::train {

class Loss {
 public:
  using Fn =
      std::function<Output(const Scope& scope, const Output& labels, const Output& predictions)>;

  Loss() = default;
  Loss(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}

  // "sparse_categorical_crossentropy", ...
  const std::string& name() const { return name_; }
  explicit operator bool() const { return static_cast<bool>(fn_); }
  // The mean loss over the batch; errors (mismatched shapes or dtypes) go to `scope`.
  Output operator()(const Scope& scope, const Output& labels, const Output& predictions) const;

 private:
  std::string name_;
  Fn fn_;
};

// Integer class labels [batch] (or [batch, 1]) against class scores [batch, classes]: logits when
// `from_logits`, else probabilities (clipped to [1e-7, 1 - 1e-7] before the log).
Loss SparseCategoricalCrossentropy(bool from_logits = false);
// One-hot (or soft) labels [batch, classes] against scores [batch, classes].
Loss CategoricalCrossentropy(bool from_logits = false);
// mean((labels - predictions)^2) over every element.
Loss MeanSquaredError();
// Labels in {0, 1} (or [0, 1]) against one score per element: a logit when `from_logits`, else a
// probability (clipped as above).
Loss BinaryCrossentropy(bool from_logits = false);

}  // namespace weft::train
