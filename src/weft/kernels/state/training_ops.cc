// Optimizer update kernels: ResourceApplyGradientDescent, ResourceApplyMomentum,
// ResourceApplyAdagradV2, ResourceApplyAdam and ResourceApplyAdamW, applied in place to resource
// variables with the reference system's formulas. Each kernel locks its variables (in address
// order, see VarLocks), checks that they are initialized and that every slot and the gradient have
// the variable's shape, makes each buffer exclusively its own (copy-on-write, see var.h), then runs
// one fused pass over the elements: shards of the flat arrays on the intra-op threads for large
// variables, inline for small ones.
#include <cmath>

#include "weft/kernels/eigen_support.h"
#include "weft/kernels/state/state_kernels.h"
#include "weft/kernels/state/training_util.h"
#include "weft/kernels/state/var.h"

namespace weft::kernels::state {
namespace {

// var, alpha, delta: var -= alpha * delta.
template <typename T>
class ApplyGradientDescentOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(T alpha, ScalarInput<T>(context, 1, "alpha"));
    const Tensor& delta = context->input(2);
    std::vector<std::shared_ptr<Var>> vars;
    std::unique_ptr<VarLocks> locks;
    WEFT_RETURN_IF_ERROR(PrepareVars<T>(context, {"var"}, delta, &vars, &locks));
    Tensor* var = vars[0]->tensor();
    ForShards(context, var->NumElements(), 2, [&](int64_t begin, int64_t end) {
      auto v = Range<T>(var, begin, end);
      v -= Range<T>(delta, begin, end) * alpha;
    });
    return Status::OK();
  }
};

// var, accum, lr, grad, momentum:
//   accum = accum * momentum + grad
//   var -= lr * accum                                (plain)
//   var -= lr * grad + lr * momentum * accum         (Nesterov)
template <typename T>
class ApplyMomentumOp final : public OpKernel {
 public:
  explicit ApplyMomentumOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("use_nesterov", &use_nesterov_));
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(T lr, ScalarInput<T>(context, 2, "lr"));
    WEFT_ASSIGN_OR_RETURN(T momentum, ScalarInput<T>(context, 4, "momentum"));
    const Tensor& grad = context->input(3);
    std::vector<std::shared_ptr<Var>> vars;
    std::unique_ptr<VarLocks> locks;
    WEFT_RETURN_IF_ERROR(PrepareVars<T>(context, {"var", "accum"}, grad, &vars, &locks));
    Tensor* var = vars[0]->tensor();
    Tensor* accum = vars[1]->tensor();
    ForShards(context, var->NumElements(), 6, [&](int64_t begin, int64_t end) {
      auto v = Range<T>(var, begin, end);
      auto a = Range<T>(accum, begin, end);
      auto g = Range<T>(grad, begin, end);
      a = a * momentum + g;
      if (use_nesterov_) {
        v -= g * lr + a * (momentum * lr);
      } else {
        v -= a * lr;
      }
    });
    return Status::OK();
  }

 private:
  bool use_nesterov_ = false;
};

// var, accum, lr, epsilon, grad:
//   accum += grad^2                                 (unless update_slots is false)
//   var -= lr * grad / (sqrt(accum) + epsilon)
template <typename T>
class ApplyAdagradOp final : public OpKernel {
 public:
  explicit ApplyAdagradOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("update_slots", &update_slots_));
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(T lr, ScalarInput<T>(context, 2, "lr"));
    WEFT_ASSIGN_OR_RETURN(T epsilon, ScalarInput<T>(context, 3, "epsilon"));
    const Tensor& grad = context->input(4);
    std::vector<std::shared_ptr<Var>> vars;
    std::unique_ptr<VarLocks> locks;
    WEFT_RETURN_IF_ERROR(PrepareVars<T>(context, {"var", "accum"}, grad, &vars, &locks));
    Tensor* var = vars[0]->tensor();
    Tensor* accum = vars[1]->tensor();
    ForShards(context, var->NumElements(), 8, [&](int64_t begin, int64_t end) {
      auto v = Range<T>(var, begin, end);
      auto a = Range<T>(accum, begin, end);
      auto g = Range<T>(grad, begin, end);
      if (update_slots_) a += g.square();
      v -= g * lr / (a.sqrt() + epsilon);
    });
    return Status::OK();
  }

 private:
  bool update_slots_ = true;
};

// var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad:
//   lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
//   m += (grad - m) * (1 - beta1)
//   v += (grad^2 - v) * (1 - beta2)
//   var -= lr_t * m / (sqrt(v) + epsilon)                                   (plain)
//   var -= lr_t * (m * beta1 + (1 - beta1) * grad) / (sqrt(v) + epsilon)    (Nesterov)
// ResourceApplyAdamW: ResourceApplyAdam's inputs (no use_nesterov) with weight_decay before grad:
//   m, v as above
//   var -= lr * weight_decay * var + lr_t * m / (sqrt(v) + epsilon)
// The decay is taken from var before the step: the reference's AdamW decays var first and then
// applies Adam, whose step does not read var, so this one pass gives the same result.
template <typename T, bool kDecoupledDecay>
class ApplyAdamOp final : public OpKernel {
 public:
  explicit ApplyAdamOp(OpKernelConstruction* context) : OpKernel(context) {
    if (!kDecoupledDecay) context->SetStatus(context->GetAttr("use_nesterov", &use_nesterov_));
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(const AdamHyperparameters<T> h, AdamHyperparameters<T>::Read(context));
    const T beta1 = h.beta1, beta2 = h.beta2, epsilon = h.epsilon, lr_t = h.lr_t;
    T decay = 0;
    if (kDecoupledDecay) {
      WEFT_ASSIGN_OR_RETURN(const T lr, ScalarInput<T>(context, 5, "lr"));
      WEFT_ASSIGN_OR_RETURN(const T weight_decay, ScalarInput<T>(context, 9, "weight_decay"));
      decay = lr * weight_decay;
    }
    const Tensor& grad = context->input(kDecoupledDecay ? 10 : 9);
    std::vector<std::shared_ptr<Var>> vars;
    std::unique_ptr<VarLocks> locks;
    WEFT_RETURN_IF_ERROR(PrepareVars<T>(context, {"var", "m", "v"}, grad, &vars, &locks));
    Tensor* var = vars[0]->tensor();
    Tensor* m = vars[1]->tensor();
    Tensor* v = vars[2]->tensor();
    ForShards(context, var->NumElements(), kDecoupledDecay ? 22 : 20,
              [&](int64_t begin, int64_t end) {
                auto w = Range<T>(var, begin, end);
                auto m_r = Range<T>(m, begin, end);
                auto v_r = Range<T>(v, begin, end);
                auto g = Range<T>(grad, begin, end);
                m_r += (g - m_r) * (T(1) - beta1);
                v_r += (g.square() - v_r) * (T(1) - beta2);
                if (kDecoupledDecay) {
                  w -= w * decay + m_r * lr_t / (v_r.sqrt() + epsilon);
                } else if (use_nesterov_) {
                  w -= (m_r * beta1 + g * (T(1) - beta1)) * lr_t / (v_r.sqrt() + epsilon);
                } else {
                  w -= m_r * lr_t / (v_r.sqrt() + epsilon);
                }
              });
    return Status::OK();
  }

 private:
  bool use_nesterov_ = false;
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<ApplyGradientDescentOp<T>>(
      KernelDef("ResourceApplyGradientDescent", "CPU").TypeConstraint<T>("T"));
  registry.Register<ApplyMomentumOp<T>>(
      KernelDef("ResourceApplyMomentum", "CPU").TypeConstraint<T>("T"));
  registry.Register<ApplyAdagradOp<T>>(
      KernelDef("ResourceApplyAdagradV2", "CPU").TypeConstraint<T>("T"));
  registry.Register<ApplyAdamOp<T, false>>(
      KernelDef("ResourceApplyAdam", "CPU").TypeConstraint<T>("T"));
  registry.Register<ApplyAdamOp<T, true>>(
      KernelDef("ResourceApplyAdamW", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterTrainingKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
}

}  // namespace weft::kernels::state
