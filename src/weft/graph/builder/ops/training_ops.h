// Typed builders for the optimizer update ops (see ops/training_ops.cc). `var` and the slots are
// variable handles; the other inputs are scalars except `grad`/`delta`, which has the variable's
// shape (dense ops) or holds the rows of the variable named by the vector `indices` (sparse ops).
// Each op is placed on `var`'s requested device when it has one, and takes its T from `var`'s
// VarHandleOp when visible so literal hyperparameters convert (ResourceApplyMomentum(s, w, accum,
// 0.05, grad, 0.9)). Each returns Output(node) — the ops have no outputs — for use as a target;
// after an error in the scope, an empty Output.
#pragma once

#include "weft/graph/builder/node_builder.h"

namespace weft::ops {

struct ApplyAttrs {
  bool use_locking = false;   // accepted for compatibility; updates always lock the variables
  bool use_nesterov = false;  // Momentum and Adam only
  bool update_slots = true;   // Adagrad only: false leaves `accum` as it is
};

Output ResourceApplyGradientDescent(const Scope& scope, const Input& var, const Input& alpha,
                                    const Input& delta, const ApplyAttrs& attrs = {});
Output ResourceApplyMomentum(const Scope& scope, const Input& var, const Input& accum,
                             const Input& lr, const Input& grad, const Input& momentum,
                             const ApplyAttrs& attrs = {});
Output ResourceApplyAdagradV2(const Scope& scope, const Input& var, const Input& accum,
                              const Input& lr, const Input& epsilon, const Input& grad,
                              const ApplyAttrs& attrs = {});
Output ResourceApplyAdam(const Scope& scope, const Input& var, const Input& m, const Input& v,
                         const Input& beta1_power, const Input& beta2_power, const Input& lr,
                         const Input& beta1, const Input& beta2, const Input& epsilon,
                         const Input& grad, const ApplyAttrs& attrs = {});
// Adam with decoupled weight decay: ResourceApplyAdam, and var also loses lr * weight_decay * var.
Output ResourceApplyAdamW(const Scope& scope, const Input& var, const Input& m, const Input& v,
                          const Input& beta1_power, const Input& beta2_power, const Input& lr,
                          const Input& beta1, const Input& beta2, const Input& epsilon,
                          const Input& weight_decay, const Input& grad,
                          const ApplyAttrs& attrs = {});

Output ResourceSparseApplyGradientDescent(const Scope& scope, const Input& var, const Input& alpha,
                                          const Input& grad, const Input& indices,
                                          const ApplyAttrs& attrs = {});
Output ResourceSparseApplyAdagradV2(const Scope& scope, const Input& var, const Input& accum,
                                    const Input& lr, const Input& epsilon, const Input& grad,
                                    const Input& indices, const ApplyAttrs& attrs = {});
Output ResourceSparseApplyAdam(const Scope& scope, const Input& var, const Input& m, const Input& v,
                               const Input& beta1_power, const Input& beta2_power, const Input& lr,
                               const Input& beta1, const Input& beta2, const Input& epsilon,
                               const Input& grad, const Input& indices,
                               const ApplyAttrs& attrs = {});

}  // namespace weft::ops
