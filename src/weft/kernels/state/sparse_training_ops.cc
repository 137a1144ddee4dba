// Sparse optimizer update kernels: ResourceSparseApplyGradientDescent, ResourceSparseApplyAdagradV2
// and ResourceSparseApplyAdam. The gradient arrives as rows (`grad`, [n, ...]) and the variable
// rows they belong to (`indices`, [n]), as an embedding lookup's gradient does; only those rows of
// the variable and its slots are read and written, so a step costs the rows it touched, not the
// table. Duplicate indices are summed first (the update is the dense update of the summed
// gradient, whatever the order of the rows), and an index outside the variable is an error naming
// it, its position and the variable. Adam is the lazy kind (TF Addons' LazyAdam): rows absent from
// a step keep their moments and values.
#include <algorithm>
#include <cmath>
#include <utility>

#include "weft/kernels/prefetch.h"
#include "weft/kernels/state/state_kernels.h"
#include "weft/kernels/state/training_util.h"

namespace weft::kernels::state {
namespace {

// A sparse gradient checked against its variable, duplicates summed: the gradient of variable row
// `rows[i]` is `values + i * width`. The rows are distinct.
template <typename T>
struct SparseGradient {
  std::vector<int64_t> rows;
  const T* values = nullptr;
  int64_t width = 0;
  Tensor summed;  // owns `values` when duplicates had to be summed
};

// Index `i` of `indices` (int32 or int64, as the op allows).
int64_t IndexAt(const Tensor& indices, int64_t i) {
  return indices.dtype() == DataType::kInt32 ? indices.data<int32_t>()[i]
                                             : indices.data<int64_t>()[i];
}

// Checks `grad` and `indices` against `var`'s shape; returns the rows the indices name.
Status CheckSparseShapes(const OpKernel& kernel, Var& var, const Tensor& grad,
                         const Tensor& indices, std::vector<int64_t>* rows) {
  const TensorShape& shape = var.tensor()->shape();
  if (shape.dims() < 1) {
    return NodeError(kernel, "variable '", var.name(), "' of shape ", shape,
                     " cannot take a sparse update: it needs at least one dimension");
  }
  if (indices.dims() != 1) {
    return NodeError(kernel, "indices must be a vector, but has shape ", indices.shape());
  }
  const int64_t n = indices.dim_size(0);
  if (grad.dims() != shape.dims() || grad.dim_size(0) != n) {
    return NodeError(kernel, "gradient of shape ", grad.shape(), " must have ", n,
                     " rows (one per index) of variable '", var.name(), "' of shape ", shape);
  }
  for (int d = 1; d < shape.dims(); ++d) {
    if (grad.dim_size(d) != shape.dim_size(d)) {
      return NodeError(kernel, "gradient of shape ", grad.shape(), " does not match the rows of ",
                       "variable '", var.name(), "' of shape ", shape);
    }
  }
  rows->resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = IndexAt(indices, i);
    if (row < 0 || row >= shape.dim_size(0)) {
      return NodeError(kernel, "index ", row, " at position ", i, " is outside variable '",
                       var.name(), "' of ", shape.dim_size(0), " rows");
    }
    (*rows)[i] = row;
  }
  return Status::OK();
}

// The checked gradient, with the rows of repeated indices summed (in index order) when any repeat.
template <typename T>
Status MakeSparseGradient(const OpKernel& kernel, Var& var, const Tensor& grad,
                          const Tensor& indices, SparseGradient<T>* out) {
  std::vector<int64_t> rows;
  WEFT_RETURN_IF_ERROR(CheckSparseShapes(kernel, var, grad, indices, &rows));
  const int64_t n = static_cast<int64_t>(rows.size());
  out->width = n == 0 ? 0 : grad.NumElements() / n;
  std::vector<std::pair<int64_t, int64_t>> order(n);  // (row, position)
  for (int64_t i = 0; i < n; ++i) order[i] = {rows[i], i};
  std::sort(order.begin(), order.end());
  const bool repeats =
      std::adjacent_find(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return a.first == b.first;
      }) != order.end();
  if (!repeats) {
    out->rows = std::move(rows);
    out->values = grad.data<T>();
    return Status::OK();
  }
  std::vector<int64_t> unique;
  for (const auto& [row, position] : order) {
    if (unique.empty() || unique.back() != row) unique.push_back(row);
  }
  out->summed = Tensor(DataTypeToEnum<T>::value,
                       TensorShape({static_cast<int64_t>(unique.size()), out->width}));
  T* summed = out->summed.template data<T>();
  std::fill(summed, summed + out->summed.NumElements(), T(0));
  int64_t slot = -1;
  for (int64_t k = 0; k < n; ++k) {
    if (k == 0 || order[k].first != order[k - 1].first) ++slot;
    const T* source = grad.data<T>() + order[k].second * out->width;
    T* target = summed + slot * out->width;
    for (int64_t j = 0; j < out->width; ++j) target[j] += source[j];
  }
  out->rows = std::move(unique);
  out->values = summed;
  return Status::OK();
}

// Everything a sparse kernel does but its per-row formula: finds, locks and checks the variable
// and its slots (roles), checks and sums the gradient (input `grad_input`, indices after it),
// makes the buffers exclusively theirs, then calls update(row, var, slots, grad) once per
// distinct row, sharded on the intra-op threads when there is enough work. `update` sees Eigen
// views of one row of the variable, of each slot and of the gradient.
template <typename T, typename Update>
Status ApplySparse(OpKernelContext* context, const std::vector<const char*>& roles, int grad_input,
                   double cost_per_element, Update&& update) {
  std::vector<std::shared_ptr<Var>> vars;
  std::unique_ptr<VarLocks> locks;
  WEFT_RETURN_IF_ERROR(LockVars<T>(context, roles, &vars, &locks));
  SparseGradient<T> gradient;
  WEFT_RETURN_IF_ERROR(MakeSparseGradient<T>(context->kernel(), *vars[0],
                                             context->input(grad_input),
                                             context->input(grad_input + 1), &gradient));
  WEFT_RETURN_IF_ERROR(PrepareLockedVars(context, vars));
  std::vector<Tensor*> tensors;
  std::vector<T*> bases;  // of the variable and its slots, whose rows the loop asks for ahead
  for (const std::shared_ptr<Var>& var : vars) {
    tensors.push_back(var->tensor());
    bases.push_back(var->tensor()->template data<T>());
  }
  const int64_t width = gradient.width;
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<UnalignedEigenTensorMap<T>> slots;
    for (int64_t i = begin; i < end; ++i) {
      if (i + kPrefetchRowsAhead < end) {
        const int64_t ahead = gradient.rows[i + kPrefetchRowsAhead] * width;
        for (T* base : bases) PrefetchRowForWrite(base + ahead, width * sizeof(T));
      }
      const int64_t offset = gradient.rows[i] * width;
      slots.clear();
      for (size_t s = 1; s < tensors.size(); ++s) {
        slots.push_back(Range<T>(tensors[s], offset, offset + width));
      }
      update(Range<T>(tensors[0], offset, offset + width), slots,
             ConstUnalignedEigenTensorMap<T>(gradient.values + i * width, width));
    }
  };
  const int64_t rows = static_cast<int64_t>(gradient.rows.size());
  if (rows * width >= kMinParallelElements) {
    ParallelFor(context, rows, cost_per_element * width, run);
  } else if (rows > 0) {
    run(0, rows);
  }
  return Status::OK();
}

template <typename T>
using Row = UnalignedEigenTensorMap<T>;
template <typename T>
using Slots = std::vector<UnalignedEigenTensorMap<T>>;
template <typename T>
using GradRow = ConstUnalignedEigenTensorMap<T>;

// var, alpha, grad, indices: var[indices] -= alpha * grad.
template <typename T>
class SparseApplyGradientDescentOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(T alpha, ScalarInput<T>(context, 1, "alpha"));
    return ApplySparse<T>(context, {"var"}, 2, 2,
                          [alpha](Row<T> v, Slots<T>&, GradRow<T> g) { v -= g * alpha; });
  }
};

// var, accum, lr, epsilon, grad, indices, for each row r named:
//   accum[r] += grad^2                               (unless update_slots is false)
//   var[r] -= lr * grad / (sqrt(accum[r]) + epsilon)
template <typename T>
class SparseApplyAdagradOp final : public OpKernel {
 public:
  explicit SparseApplyAdagradOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("update_slots", &update_slots_));
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(T lr, ScalarInput<T>(context, 2, "lr"));
    WEFT_ASSIGN_OR_RETURN(T epsilon, ScalarInput<T>(context, 3, "epsilon"));
    const bool update_slots = update_slots_;
    return ApplySparse<T>(context, {"var", "accum"}, 4, 8,
                          [=](Row<T> v, Slots<T>& slots, GradRow<T> g) {
                            if (update_slots) slots[0] += g.square();
                            v -= g * lr / (slots[0].sqrt() + epsilon);
                          });
  }

 private:
  bool update_slots_ = true;
};

// var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, indices: Adam's update
// (training_ops.cc) on the rows named only.
template <typename T>
class SparseApplyAdamOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(const AdamHyperparameters<T> h, AdamHyperparameters<T>::Read(context));
    return ApplySparse<T>(context, {"var", "m", "v"}, 9, 20,
                          [h](Row<T> w, Slots<T>& slots, GradRow<T> g) {
                            slots[0] += (g - slots[0]) * (T(1) - h.beta1);
                            slots[1] += (g.square() - slots[1]) * (T(1) - h.beta2);
                            w -= slots[0] * h.lr_t / (slots[1].sqrt() + h.epsilon);
                          });
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<SparseApplyGradientDescentOp<T>>(
      KernelDef("ResourceSparseApplyGradientDescent", "CPU").TypeConstraint<T>("T"));
  registry.Register<SparseApplyAdagradOp<T>>(
      KernelDef("ResourceSparseApplyAdagradV2", "CPU").TypeConstraint<T>("T"));
  registry.Register<SparseApplyAdamOp<T>>(
      KernelDef("ResourceSparseApplyAdam", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterSparseTrainingKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
}

}  // namespace weft::kernels::state
