// Optimizer update kernels: ResourceApplyGradientDescent, ResourceApplyMomentum and
// ResourceApplyAdam, applied in place to resource variables with the reference system's
// formulas. Each kernel locks its variables (in address order, see VarLocks), checks that they are
// initialized and that every slot and the gradient have the variable's shape, makes each buffer
// exclusively its own (copy-on-write, see var.h), then runs one fused pass over the elements:
// shards of the flat arrays on the intra-op threads for large variables, inline for small ones.
#include <cmath>

#include "weft/kernels/eigen_support.h"
#include "weft/kernels/state/state_kernels.h"
#include "weft/kernels/state/var.h"

namespace weft::kernels::state {
namespace {

// The scalar hyperparameter at input `index`.
template <typename T>
StatusOr<T> ScalarInput(OpKernelContext* context, int index, const char* what) {
  const Tensor& t = context->input(index);
  if (t.dims() != 0) {
    return NodeError(context->kernel(), what, " must be a scalar, but has shape ", t.shape());
  }
  return *t.data<T>();
}

// Runs fn(begin, end) over [0, n): sharded on the intra-op threads when n is large.
template <typename Fn>
void ForShards(OpKernelContext* context, int64_t n, double cost_per_element, Fn&& fn) {
  if (n >= kMinParallelElements) {
    ParallelFor(context, n, cost_per_element, fn);
  } else if (n > 0) {
    fn(int64_t{0}, n);
  }
}

// A rank-1 Eigen view of elements [begin, end) of `t`.
template <typename T>
UnalignedEigenTensorMap<T> Range(Tensor* t, int64_t begin, int64_t end) {
  return UnalignedEigenTensorMap<T>(t->data<T>() + begin, end - begin);
}
template <typename T>
ConstUnalignedEigenTensorMap<T> Range(const Tensor& t, int64_t begin, int64_t end) {
  return ConstUnalignedEigenTensorMap<T>(t.data<T>() + begin, end - begin);
}

// Looks up the Vars of resource inputs [0, roles.size()), locks them, and checks that each is
// initialized and that the slots and `grad` have the variable's shape. On success the Vars stay
// locked until `*locks` is destroyed and their buffers are exclusively theirs.
template <typename T>
Status PrepareVars(OpKernelContext* context, const std::vector<const char*>& roles,
                   const Tensor& grad, std::vector<std::shared_ptr<Var>>* vars,
                   std::unique_ptr<VarLocks>* locks) {
  const OpKernel& kernel = context->kernel();
  std::vector<Var*> raw;
  for (size_t i = 0; i < roles.size(); ++i) {
    std::string role = i == 0 ? "" : StrCat(roles[i], " ");
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Var> var,
                          LookupVar(context, static_cast<int>(i), DataTypeToEnum<T>::value, role));
    raw.push_back(var.get());
    vars->push_back(std::move(var));
  }
  *locks = std::make_unique<VarLocks>(raw);
  for (size_t i = 0; i < raw.size(); ++i) {
    if (!raw[i]->is_initialized()) {
      return NotInitialized(kernel, raw[i]->name(), i == 0 ? "" : StrCat(roles[i], " "));
    }
  }
  const TensorShape& shape = raw[0]->tensor()->shape();
  for (size_t i = 1; i < raw.size(); ++i) {
    if (!(raw[i]->tensor()->shape() == shape)) {
      return NodeError(kernel, roles[i], " variable '", raw[i]->name(), "' has shape ",
                       raw[i]->tensor()->shape(), ", but variable '", raw[0]->name(),
                       "' has shape ", shape);
    }
  }
  if (!(grad.shape() == shape)) {
    return NodeError(kernel, "gradient of shape ", grad.shape(), " does not match variable '",
                     raw[0]->name(), "' of shape ", shape);
  }
  for (Var* var : raw) WEFT_RETURN_IF_ERROR(PrepareToUpdate(context, var));
  return Status::OK();
}

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

// var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad:
//   lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
//   m += (grad - m) * (1 - beta1)
//   v += (grad^2 - v) * (1 - beta2)
//   var -= lr_t * m / (sqrt(v) + epsilon)                                   (plain)
//   var -= lr_t * (m * beta1 + (1 - beta1) * grad) / (sqrt(v) + epsilon)    (Nesterov)
template <typename T>
class ApplyAdamOp final : public OpKernel {
 public:
  explicit ApplyAdamOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("use_nesterov", &use_nesterov_));
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(T beta1_power, ScalarInput<T>(context, 3, "beta1_power"));
    WEFT_ASSIGN_OR_RETURN(T beta2_power, ScalarInput<T>(context, 4, "beta2_power"));
    WEFT_ASSIGN_OR_RETURN(T lr, ScalarInput<T>(context, 5, "lr"));
    WEFT_ASSIGN_OR_RETURN(T beta1, ScalarInput<T>(context, 6, "beta1"));
    WEFT_ASSIGN_OR_RETURN(T beta2, ScalarInput<T>(context, 7, "beta2"));
    WEFT_ASSIGN_OR_RETURN(T epsilon, ScalarInput<T>(context, 8, "epsilon"));
    const Tensor& grad = context->input(9);
    std::vector<std::shared_ptr<Var>> vars;
    std::unique_ptr<VarLocks> locks;
    WEFT_RETURN_IF_ERROR(PrepareVars<T>(context, {"var", "m", "v"}, grad, &vars, &locks));
    Tensor* var = vars[0]->tensor();
    Tensor* m = vars[1]->tensor();
    Tensor* v = vars[2]->tensor();
    const T lr_t = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
    ForShards(context, var->NumElements(), 20, [&](int64_t begin, int64_t end) {
      auto w = Range<T>(var, begin, end);
      auto m_r = Range<T>(m, begin, end);
      auto v_r = Range<T>(v, begin, end);
      auto g = Range<T>(grad, begin, end);
      m_r += (g - m_r) * (T(1) - beta1);
      v_r += (g.square() - v_r) * (T(1) - beta2);
      if (use_nesterov_) {
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
  registry.Register<ApplyAdamOp<T>>(KernelDef("ResourceApplyAdam", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterTrainingKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
}

}  // namespace weft::kernels::state
