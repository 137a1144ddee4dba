// What the dense (training_ops.cc) and sparse (sparse_training_ops.cc) optimizer kernels share:
// scalar hyperparameters, element ranges as Eigen views, sharding over the intra-op threads, and
// finding, locking and checking a variable with its slots. Kernels only; stateless helpers.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "weft/kernels/eigen_support.h"
#include "weft/kernels/state/var.h"

namespace weft::kernels::state {

// The scalar hyperparameter at input `index`.
template <typename T>
StatusOr<T> ScalarInput(OpKernelContext* context, int index, const char* what) {
  const Tensor& t = context->input(index);
  if (t.dims() != 0) {
    return NodeError(context->kernel(), what, " must be a scalar, but has shape ", t.shape());
  }
  return *t.data<T>();
}

// Adam's scalar inputs (inputs 3-8 of ResourceApplyAdam and ResourceSparseApplyAdam) and its
// bias-corrected step size lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power).
template <typename T>
struct AdamHyperparameters {
  T beta1, beta2, epsilon, lr_t;

  static StatusOr<AdamHyperparameters> Read(OpKernelContext* context) {
    WEFT_ASSIGN_OR_RETURN(T beta1_power, ScalarInput<T>(context, 3, "beta1_power"));
    WEFT_ASSIGN_OR_RETURN(T beta2_power, ScalarInput<T>(context, 4, "beta2_power"));
    WEFT_ASSIGN_OR_RETURN(T lr, ScalarInput<T>(context, 5, "lr"));
    AdamHyperparameters h;
    WEFT_ASSIGN_OR_RETURN(h.beta1, ScalarInput<T>(context, 6, "beta1"));
    WEFT_ASSIGN_OR_RETURN(h.beta2, ScalarInput<T>(context, 7, "beta2"));
    WEFT_ASSIGN_OR_RETURN(h.epsilon, ScalarInput<T>(context, 8, "epsilon"));
    h.lr_t = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
    return h;
  }
};

// Runs fn(begin, end) over [0, n): sharded on the intra-op threads when n * cost is large.
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

// Looks up the Vars of resource inputs [0, roles.size()) (roles name them in errors: "var",
// "accum", ...), locks them, and checks that each is initialized and that every slot has the
// variable's shape. The Vars stay locked until `*locks` is destroyed.
template <typename T>
Status LockVars(OpKernelContext* context, const std::vector<const char*>& roles,
                std::vector<std::shared_ptr<Var>>* vars, std::unique_ptr<VarLocks>* locks) {
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
  return Status::OK();
}

// Makes every locked Var's buffer exclusively its own before the update (copy-on-write, var.h).
inline Status PrepareLockedVars(OpKernelContext* context,
                                const std::vector<std::shared_ptr<Var>>& vars) {
  for (const std::shared_ptr<Var>& var : vars) {
    WEFT_RETURN_IF_ERROR(PrepareToUpdate(context, var.get()));
  }
  return Status::OK();
}

// LockVars, then checks that the dense `grad` has the variable's shape, then PrepareLockedVars.
template <typename T>
Status PrepareVars(OpKernelContext* context, const std::vector<const char*>& roles,
                   const Tensor& grad, std::vector<std::shared_ptr<Var>>* vars,
                   std::unique_ptr<VarLocks>* locks) {
  WEFT_RETURN_IF_ERROR(LockVars<T>(context, roles, vars, locks));
  Var& var = *(*vars)[0];
  if (!(grad.shape() == var.tensor()->shape())) {
    return NodeError(context->kernel(), "gradient of shape ", grad.shape(),
                     " does not match variable '", var.name(), "' of shape ",
                     var.tensor()->shape());
  }
  return PrepareLockedVars(context, *vars);
}

}  // namespace weft::kernels::state
