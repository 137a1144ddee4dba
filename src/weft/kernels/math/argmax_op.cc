// CPU kernel for ArgMax (float32, float64, int32, int64, uint8 -> int32 or int64): the index of
// the largest value along one axis, viewing the input as [A, R, B] with R the reduced axis. Ties
// go to the first index; a NaN counts as larger than any number (the first NaN wins), as in NumPy.
#include <cmath>
#include <type_traits>
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/math/device_eval.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

// Whether `value` replaces `best` as the maximum seen so far.
template <typename T>
bool Beats(T value, T best) {
  if constexpr (std::is_floating_point_v<T>) {
    return !std::isnan(best) && (value > best || std::isnan(value));
  } else {
    return value > best;
  }
}

template <typename T, typename Tout>
class ArgMaxOp final : public OpKernel {
 public:
  explicit ArgMaxOp(OpKernelConstruction* context) : OpKernel(context) {}

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    const Tensor& dimension = context->input(1);
    if (dimension.dims() != 0) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": dimension must be a scalar, but has shape ", dimension.shape());
    }
    const int rank = input.dims();
    const int64_t axis = dimension.dtype() == DataType::kInt32 ? *dimension.data<int32_t>()
                                                               : *dimension.data<int64_t>();
    if (axis < -rank || axis >= rank) {
      return InvalidArgument(FormatNodeForError(def()), ": dimension ", axis,
                             " is out of range for input of rank ", rank, " (shape ", input.shape(),
                             ")");
    }
    const int ax = static_cast<int>(axis < 0 ? axis + rank : axis);
    const int64_t r = input.dim_size(ax);
    if (r == 0) {
      return InvalidArgument(FormatNodeForError(def()), ": reduction axis ", ax,
                             " is empty in shape ", input.shape());
    }
    int64_t a = 1, b = 1;
    for (int i = 0; i < ax; ++i) a *= input.dim_size(i);
    for (int i = ax + 1; i < rank; ++i) b *= input.dim_size(i);
    TensorShape out_shape = input.shape();
    out_shape.RemoveDim(ax);
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, out_shape, &out));
    if (out->NumElements() == 0) return Status::OK();

    const T* in = input.data<T>();
    Tout* o = out->data<Tout>();
    // Rows a in [a0, a1), columns b in [b0, b1).
    auto process = [&](int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
      std::vector<T> best;
      for (int64_t ai = a0; ai < a1; ++ai) {
        const T* base = in + ai * r * b;
        Tout* orow = o + ai * b;
        if (b == 1) {
          int64_t arg = 0;
          for (int64_t ri = 1; ri < r; ++ri) {
            if (Beats(base[ri], base[arg])) arg = ri;
          }
          orow[0] = static_cast<Tout>(arg);
          continue;
        }
        best.assign(base + b0, base + b1);
        std::fill(orow + b0, orow + b1, Tout{0});
        for (int64_t ri = 1; ri < r; ++ri) {
          const T* row = base + ri * b;
          for (int64_t bi = b0; bi < b1; ++bi) {
            if (Beats(row[bi], best[bi - b0])) {
              best[bi - b0] = row[bi];
              orow[bi] = static_cast<Tout>(ri);
            }
          }
        }
      }
    };
    if (input.NumElements() < kMinParallelElements) {
      process(0, a, 0, b);
    } else if (a > 1 || b == 1) {
      ParallelFor(context, a, static_cast<double>(r * b),
                  [&](int64_t a0, int64_t a1) { process(a0, a1, 0, b); });
    } else {
      ParallelFor(context, b, static_cast<double>(r),
                  [&](int64_t b0, int64_t b1) { process(0, 1, b0, b1); });
    }
    return Status::OK();
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  auto def = [](DataType out) {
    return KernelDef("ArgMax", "CPU")
        .TypeConstraint<T>("T")
        .TypeConstraint("Tidx", {DataType::kInt32, DataType::kInt64})
        .TypeConstraint("output_type", {out});
  };
  registry.Register<ArgMaxOp<T, int32_t>>(def(DataType::kInt32));
  registry.Register<ArgMaxOp<T, int64_t>>(def(DataType::kInt64));
}

}  // namespace

void RegisterArgMaxKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
  RegisterForType<uint8_t>(registry);
}

}  // namespace weft::kernels
