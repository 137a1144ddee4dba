#include "weft/graph/builder/ops/training_ops.h"

#include "weft/graph/builder/ops/state_ops.h"

namespace weft::ops {
namespace {

// A builder for `op_type` colocated with `var`, with T from `var`'s handle when known.
NodeBuilder ApplyBuilder(const Scope& scope, std::string_view op_type, const Input& var,
                         const ApplyAttrs& attrs) {
  NodeBuilder builder(internal::ColocateWithHandle(scope, var), op_type);
  builder.Attr("use_locking", attrs.use_locking);
  DataType dtype = internal::HandleDtype(var);
  if (dtype != DataType::kInvalid) builder.Attr("T", dtype);
  return builder;
}

Output Finish(NodeBuilder& builder) {
  Node* node = builder.Finalize();
  return node ? Output(node, 0) : Output();
}

}  // namespace

Output ResourceApplyGradientDescent(const Scope& scope, const Input& var, const Input& alpha,
                                    const Input& delta, const ApplyAttrs& attrs) {
  NodeBuilder builder = ApplyBuilder(scope, "ResourceApplyGradientDescent", var, attrs);
  builder.Input(var).Input(alpha).Input(delta);
  return Finish(builder);
}

Output ResourceApplyMomentum(const Scope& scope, const Input& var, const Input& accum,
                             const Input& lr, const Input& grad, const Input& momentum,
                             const ApplyAttrs& attrs) {
  NodeBuilder builder = ApplyBuilder(scope, "ResourceApplyMomentum", var, attrs);
  builder.Input(var).Input(accum).Input(lr).Input(grad).Input(momentum);
  builder.Attr("use_nesterov", attrs.use_nesterov);
  return Finish(builder);
}

Output ResourceApplyAdagradV2(const Scope& scope, const Input& var, const Input& accum,
                              const Input& lr, const Input& epsilon, const Input& grad,
                              const ApplyAttrs& attrs) {
  NodeBuilder builder = ApplyBuilder(scope, "ResourceApplyAdagradV2", var, attrs);
  builder.Input(var).Input(accum).Input(lr).Input(epsilon).Input(grad);
  builder.Attr("update_slots", attrs.update_slots);
  return Finish(builder);
}

Output ResourceApplyAdam(const Scope& scope, const Input& var, const Input& m, const Input& v,
                         const Input& beta1_power, const Input& beta2_power, const Input& lr,
                         const Input& beta1, const Input& beta2, const Input& epsilon,
                         const Input& grad, const ApplyAttrs& attrs) {
  NodeBuilder builder = ApplyBuilder(scope, "ResourceApplyAdam", var, attrs);
  builder.Input(var).Input(m).Input(v).Input(beta1_power).Input(beta2_power).Input(lr);
  builder.Input(beta1).Input(beta2).Input(epsilon).Input(grad);
  builder.Attr("use_nesterov", attrs.use_nesterov);
  return Finish(builder);
}

Output ResourceApplyAdamW(const Scope& scope, const Input& var, const Input& m, const Input& v,
                          const Input& beta1_power, const Input& beta2_power, const Input& lr,
                          const Input& beta1, const Input& beta2, const Input& epsilon,
                          const Input& weight_decay, const Input& grad, const ApplyAttrs& attrs) {
  NodeBuilder builder = ApplyBuilder(scope, "ResourceApplyAdamW", var, attrs);
  builder.Input(var).Input(m).Input(v).Input(beta1_power).Input(beta2_power).Input(lr);
  builder.Input(beta1).Input(beta2).Input(epsilon).Input(weight_decay).Input(grad);
  return Finish(builder);
}

Output ResourceSparseApplyGradientDescent(const Scope& scope, const Input& var, const Input& alpha,
                                          const Input& grad, const Input& indices,
                                          const ApplyAttrs& attrs) {
  NodeBuilder builder = ApplyBuilder(scope, "ResourceSparseApplyGradientDescent", var, attrs);
  builder.Input(var).Input(alpha).Input(grad).Input(indices);
  return Finish(builder);
}

Output ResourceSparseApplyAdagradV2(const Scope& scope, const Input& var, const Input& accum,
                                    const Input& lr, const Input& epsilon, const Input& grad,
                                    const Input& indices, const ApplyAttrs& attrs) {
  NodeBuilder builder = ApplyBuilder(scope, "ResourceSparseApplyAdagradV2", var, attrs);
  builder.Input(var).Input(accum).Input(lr).Input(epsilon).Input(grad).Input(indices);
  builder.Attr("update_slots", attrs.update_slots);
  return Finish(builder);
}

Output ResourceSparseApplyAdam(const Scope& scope, const Input& var, const Input& m, const Input& v,
                               const Input& beta1_power, const Input& beta2_power, const Input& lr,
                               const Input& beta1, const Input& beta2, const Input& epsilon,
                               const Input& grad, const Input& indices, const ApplyAttrs& attrs) {
  NodeBuilder builder = ApplyBuilder(scope, "ResourceSparseApplyAdam", var, attrs);
  builder.Input(var).Input(m).Input(v).Input(beta1_power).Input(beta2_power).Input(lr);
  builder.Input(beta1).Input(beta2).Input(epsilon).Input(grad).Input(indices);
  return Finish(builder);
}

}  // namespace weft::ops
