// Optimizer update ops, applied in place to resource variables with the reference system's
// formulas: dense ResourceApplyGradientDescent, ResourceApplyMomentum, ResourceApplyAdagradV2,
// ResourceApplyAdam and ResourceApplyAdamW (Adam with decoupled weight decay), and sparse
// ResourceSparseApply{GradientDescent,AdagradV2,Adam}, whose `grad` holds rows of the variable
// named by `indices` (an embedding lookup's gradient). They have no outputs; a training step runs
// them as targets. Hyperparameters are scalars of the variable's dtype; the kernels, which see the
// variable, check `grad` against its shape.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

constexpr char kTypes[] = "T: {float32, float64}";
constexpr char kIndexTypes[] = "Tindices: {int32, int64}";

// Inputs [0, num_handles) are resource handles and every other input but `grad` is a scalar.
ShapeFn ApplyShape(int num_handles, int grad) {
  return [num_handles, grad](InferenceContext& context) -> Status {
    for (int i = 0; i < context.num_inputs(); ++i) {
      if (i == grad) continue;
      Status status = context.WithRank(i, 0);
      if (!status.ok()) {
        return context.Error(i < num_handles ? "resource handle " : "hyperparameter ", "input ", i,
                             " must be a scalar, but has shape ", context.input(i).DebugString());
      }
    }
    return Status::OK();
  };
}

// Inputs [0, num_handles) are resource handles and every other input but `grad` and `indices`
// (the input after it) is a scalar; `indices` is a vector and `grad` has one row per index.
ShapeFn SparseApplyShape(int num_handles, int grad) {
  return [num_handles, grad](InferenceContext& context) -> Status {
    const int indices = grad + 1;
    for (int i = 0; i < context.num_inputs(); ++i) {
      if (i == grad || i == indices) continue;
      if (!context.WithRank(i, 0).ok()) {
        return context.Error(i < num_handles ? "resource handle " : "hyperparameter ", "input ", i,
                             " must be a scalar, but has shape ", context.input(i).DebugString());
      }
    }
    if (!context.WithRank(indices, 1).ok()) {
      return context.Error("indices must be a vector, but has shape ",
                           context.input(indices).DebugString());
    }
    if (!context.WithRankAtLeast(grad, 1).ok()) {
      return context.Error("grad must have at least one dimension, but has shape ",
                           context.input(grad).DebugString());
    }
    const PartialShape& rows = context.input(indices);
    const PartialShape& values = context.input(grad);
    if (rows.rank_known() && values.rank_known()) {
      return context.CheckDimsEqual(values.dim(0), rows.dim(0), "grad's rows and indices");
    }
    return Status::OK();
  };
}

// The sparse forms: the dense op's inputs, with `grad` holding rows and `indices` after it.
void RegisterSparseTrainingOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("ResourceSparseApplyGradientDescent")
                             .Input("var: resource")
                             .Input("alpha: T")
                             .Input("grad: T")
                             .Input("indices: Tindices")
                             .Attr(kTypes)
                             .Attr(kIndexTypes)
                             .Attr("use_locking: bool = false")
                             .SetIsStateful()
                             .SetShapeFn(SparseApplyShape(1, 2))
                             .Doc("var[indices] -= alpha * grad (repeated indices summed)."));
  registry.RegisterOrDie(OpDefBuilder("ResourceSparseApplyAdagradV2")
                             .Input("var: resource")
                             .Input("accum: resource")
                             .Input("lr: T")
                             .Input("epsilon: T")
                             .Input("grad: T")
                             .Input("indices: Tindices")
                             .Attr(kTypes)
                             .Attr(kIndexTypes)
                             .Attr("use_locking: bool = false")
                             .Attr("update_slots: bool = true")
                             .SetIsStateful()
                             .SetShapeFn(SparseApplyShape(2, 4))
                             .Doc("ResourceApplyAdagradV2 on the rows named by indices only."));
  registry.RegisterOrDie(OpDefBuilder("ResourceSparseApplyAdam")
                             .Input("var: resource")
                             .Input("m: resource")
                             .Input("v: resource")
                             .Input("beta1_power: T")
                             .Input("beta2_power: T")
                             .Input("lr: T")
                             .Input("beta1: T")
                             .Input("beta2: T")
                             .Input("epsilon: T")
                             .Input("grad: T")
                             .Input("indices: Tindices")
                             .Attr(kTypes)
                             .Attr(kIndexTypes)
                             .Attr("use_locking: bool = false")
                             .SetIsStateful()
                             .SetShapeFn(SparseApplyShape(3, 9))
                             .Doc("Lazy Adam: ResourceApplyAdam on the rows named by indices only; "
                                  "other rows keep their values and moments."));
}

}  // namespace

void RegisterTrainingOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("ResourceApplyGradientDescent")
                             .Input("var: resource")
                             .Input("alpha: T")
                             .Input("delta: T")
                             .Attr(kTypes)
                             .Attr("use_locking: bool = false")
                             .SetIsStateful()
                             .SetShapeFn(ApplyShape(1, 2))
                             .Doc("var -= alpha * delta."));
  registry.RegisterOrDie(OpDefBuilder("ResourceApplyMomentum")
                             .Input("var: resource")
                             .Input("accum: resource")
                             .Input("lr: T")
                             .Input("grad: T")
                             .Input("momentum: T")
                             .Attr(kTypes)
                             .Attr("use_locking: bool = false")
                             .Attr("use_nesterov: bool = false")
                             .SetIsStateful()
                             .SetShapeFn(ApplyShape(2, 3))
                             .Doc("accum = accum * momentum + grad; var -= lr * accum (Nesterov: "
                                  "var -= lr * grad + lr * momentum * accum)."));
  registry.RegisterOrDie(OpDefBuilder("ResourceApplyAdagradV2")
                             .Input("var: resource")
                             .Input("accum: resource")
                             .Input("lr: T")
                             .Input("epsilon: T")
                             .Input("grad: T")
                             .Attr(kTypes)
                             .Attr("use_locking: bool = false")
                             .Attr("update_slots: bool = true")
                             .SetIsStateful()
                             .SetShapeFn(ApplyShape(2, 4))
                             .Doc("accum += grad^2; var -= lr * grad / (sqrt(accum) + epsilon)."));
  registry.RegisterOrDie(OpDefBuilder("ResourceApplyAdam")
                             .Input("var: resource")
                             .Input("m: resource")
                             .Input("v: resource")
                             .Input("beta1_power: T")
                             .Input("beta2_power: T")
                             .Input("lr: T")
                             .Input("beta1: T")
                             .Input("beta2: T")
                             .Input("epsilon: T")
                             .Input("grad: T")
                             .Attr(kTypes)
                             .Attr("use_locking: bool = false")
                             .Attr("use_nesterov: bool = false")
                             .SetIsStateful()
                             .SetShapeFn(ApplyShape(3, 9))
                             .Doc("Adam: m, v moving moments of grad; var -= lr_t * m / (sqrt(v) "
                                  "+ epsilon), lr_t = lr * sqrt(1 - beta2_power) / (1 - "
                                  "beta1_power)."));
  registry.RegisterOrDie(OpDefBuilder("ResourceApplyAdamW")
                             .Input("var: resource")
                             .Input("m: resource")
                             .Input("v: resource")
                             .Input("beta1_power: T")
                             .Input("beta2_power: T")
                             .Input("lr: T")
                             .Input("beta1: T")
                             .Input("beta2: T")
                             .Input("epsilon: T")
                             .Input("weight_decay: T")
                             .Input("grad: T")
                             .Attr(kTypes)
                             .Attr("use_locking: bool = false")
                             .SetIsStateful()
                             .SetShapeFn(ApplyShape(3, 10))
                             .Doc("Adam with decoupled weight decay (AdamW): ResourceApplyAdam's "
                                  "moments, and var -= lr * weight_decay * var + lr_t * m / "
                                  "(sqrt(v) + epsilon), var on the right being the value before "
                                  "the step."));
  RegisterSparseTrainingOps(registry);
}

}  // namespace weft::ops
