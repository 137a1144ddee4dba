// CPU kernels for Sum, Mean and Max (float32, float64, int32, int64; Tidx int32 or int64).
//
// The input's dims are collapsed first: size-1 dims dropped, adjacent dims that are all reduced or
// all kept merged. Then one reduced group at a time, last first, is reduced as the middle of an
// [A, R, B] view (see reduce_middle.h), so every pattern of axes becomes one or a few passes over
// contiguous memory. Mean sums, then divides once by the number of
// reduced elements (integers truncate, as in the reference system). Over an empty set, Sum gives
// 0, Max the lowest value (-inf for floats), Mean NaN for floats and 0 for integers.
#include <limits>
#include <type_traits>
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/math/device_eval.h"
#include "weft/kernels/math/math_kernels.h"
#include "weft/kernels/math/reduce_middle.h"

namespace weft::kernels {
namespace {

struct DimGroup {
  int64_t size;
  bool reduced;
};

template <typename T, typename Policy, bool kMean>
class ReductionOp final : public OpKernel {
 public:
  explicit ReductionOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("keep_dims", &keep_dims_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    std::vector<bool> reduced;
    WEFT_RETURN_IF_ERROR(ReducedAxes(input, context->input(1), &reduced));
    TensorShape out_shape;
    std::vector<DimGroup> groups;
    int64_t reduced_count = 1;
    for (int i = 0; i < input.dims(); ++i) {
      const int64_t size = input.dim_size(i);
      if (reduced[i]) {
        reduced_count *= size;
        if (keep_dims_) out_shape.AddDim(1);
      } else {
        out_shape.AddDim(size);
      }
      if (size == 1) continue;
      if (!groups.empty() && groups.back().reduced == reduced[i]) {
        groups.back().size *= size;
      } else {
        groups.push_back({size, reduced[i]});
      }
    }
    int num_reduced = 0;
    for (const DimGroup& g : groups) num_reduced += g.reduced ? 1 : 0;
    if (num_reduced == 0) return context->SetOutput(0, input.Reshaped(out_shape));

    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, out_shape, &out));
    if (input.NumElements() == 0) {
      std::fill_n(out->data<T>(), out->NumElements(), EmptyValue());
      return Status::OK();
    }
    Tensor current = input;
    while (true) {
      size_t g = groups.size() - 1;
      while (!groups[g].reduced) --g;
      int64_t before = 1, after = 1;
      for (size_t i = 0; i < g; ++i) before *= groups[i].size;
      for (size_t i = g + 1; i < groups.size(); ++i) after *= groups[i].size;
      const bool last = --num_reduced == 0;
      Tensor dest = *out;
      if (!last) {
        WEFT_ASSIGN_OR_RETURN(dest, Tensor::Allocate(input.dtype(), TensorShape({before * after})));
      }
      ReduceMiddle<T, Policy>(context, current.data<T>(), before, groups[g].size, after,
                              dest.data<T>());
      if (last) break;
      // Drop the reduced group; its kept neighbours become adjacent and merge.
      groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(g));
      if (g > 0 && g < groups.size()) {
        groups[g - 1].size *= groups[g].size;
        groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(g));
      }
      current = dest;
    }
    if constexpr (kMean) {
      auto o = Flat<T>(*out);
      const T count = static_cast<T>(reduced_count);
      EvaluateOnDevice(context, out->NumElements(),
                       [&](const auto& d) { o.device(d) = o / o.constant(count); });
    }
    return Status::OK();
  }

 private:
  static T EmptyValue() {
    if constexpr (kMean) {
      return std::numeric_limits<T>::has_quiet_NaN ? std::numeric_limits<T>::quiet_NaN() : T{0};
    } else {
      return typename Policy::EigenReducer().initialize();
    }
  }

  // Marks the axes named by `indices` (scalar or vector, negative counting from the end).
  Status ReducedAxes(const Tensor& input, const Tensor& indices, std::vector<bool>* reduced) const {
    if (indices.dims() > 1) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": reduction_indices must be a scalar or vector, but has shape ",
                             indices.shape());
    }
    const int rank = input.dims();
    reduced->assign(rank, false);
    for (int64_t i = 0; i < indices.NumElements(); ++i) {
      const int64_t axis = indices.dtype() == DataType::kInt32 ? indices.data<int32_t>()[i]
                                                               : indices.data<int64_t>()[i];
      if (axis < -rank || axis >= rank) {
        return InvalidArgument(FormatNodeForError(def()), ": invalid reduction dimension ", axis,
                               " for input of rank ", rank, " (shape ", input.shape(), ")");
      }
      (*reduced)[axis < 0 ? axis + rank : axis] = true;
    }
    return Status::OK();
  }

  bool keep_dims_ = false;
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  auto def = [](const char* op) {
    return KernelDef(op, "CPU").TypeConstraint<T>("T").TypeConstraint(
        "Tidx", {DataType::kInt32, DataType::kInt64});
  };
  registry.Register<ReductionOp<T, SumPolicy<T>, false>>(def("Sum"));
  registry.Register<ReductionOp<T, SumPolicy<T>, true>>(def("Mean"));
  registry.Register<ReductionOp<T, MaxPolicy<T>, false>>(def("Max"));
}

}  // namespace

void RegisterReductionKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
}

}  // namespace weft::kernels
