// Optimizer update ops, applied in place to resource variables: ResourceApplyGradientDescent,
// ResourceApplyMomentum and ResourceApplyAdam, with the reference system's formulas. They have
// no outputs; a training step runs them as targets. Hyperparameters are scalars of the
// variable's dtype; `grad` must have the variable's shape (checked by the kernels, which see it).
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

constexpr char kTypes[] = "T: {float32, float64}";

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
}

}  // namespace weft::ops
