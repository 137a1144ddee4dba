// CPU kernel for SelectV2: t where condition is true, else e, with condition, t and e broadcast
// together like NumPy (float32, float64, int32, int64, uint8, bool). A single-element condition
// passes t or e through without a copy when that input already has the output's shape; equal
// shapes run as one flat Eigen select; anything else walks the output row by row with per-input
// strides that are 0 along broadcast dims.
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/math/bcast.h"
#include "weft/kernels/math/device_eval.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

// The strides of `shape` over the dims of `out` (right-aligned), 0 along dims it is broadcast
// over, so that an output index maps to the input element it reads.
std::vector<int64_t> BroadcastStrides(const TensorShape& shape, const TensorShape& out) {
  const int rank = out.dims(), pad = out.dims() - shape.dims();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int i = rank - 1; i >= pad; --i) {
    const int64_t dim = shape.dim_size(i - pad);
    if (dim != 1) strides[i] = stride;
    stride *= dim;
  }
  return strides;
}

template <typename T>
class SelectV2Op final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& cond = context->input(0);
    const Tensor& t = context->input(1);
    const Tensor& e = context->input(2);
    StatusOr<BroadcastPlan> values = MakeBroadcastPlan(t.shape(), e.shape());
    StatusOr<BroadcastPlan> all = values;
    if (values.ok()) all = MakeBroadcastPlan(cond.shape(), values->output_shape);
    if (!values.ok() || !all.ok()) {
      return InvalidArgument(FormatNodeForError(def()), ": condition ", cond.shape(), ", t ",
                             t.shape(), " and e ", e.shape(), " cannot be broadcast together");
    }
    const TensorShape& out_shape = all->output_shape;
    if (cond.NumElements() == 1) {
      const Tensor& chosen = *cond.data<bool>() ? t : e;
      if (chosen.shape() == out_shape) return context->SetOutput(0, chosen);
    }
    // A forwarded t or e has the output's shape, so each element is read before it is written.
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->ForwardInputOrAllocateOutput({1, 2}, 0, out_shape, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return Status::OK();
    if (cond.shape() == out_shape && t.shape() == out_shape && e.shape() == out_shape) {
      auto o = Flat<T>(*out);
      auto c = Flat<bool>(cond);
      auto tf = Flat<T>(t);
      auto ef = Flat<T>(e);
      EvaluateOnDevice(context, n, [&](const auto& d) { o.device(d) = c.select(tf, ef); });
      return Status::OK();
    }
    SelectBroadcast(context, cond, t, e, out);
    return Status::OK();
  }

 private:
  static void SelectBroadcast(OpKernelContext* context, const Tensor& cond, const Tensor& t,
                              const Tensor& e, Tensor* out) {
    const TensorShape& shape = out->shape();
    const int rank = shape.dims();  // >= 1: rank-0 inputs all have the output's shape
    const std::vector<int64_t> sc = BroadcastStrides(cond.shape(), shape);
    const std::vector<int64_t> st = BroadcastStrides(t.shape(), shape);
    const std::vector<int64_t> se = BroadcastStrides(e.shape(), shape);
    const int64_t width = shape.dim_size(rank - 1);
    const int64_t rows = out->NumElements() / width;
    const bool* c = cond.data<bool>();
    const T* tp = t.data<T>();
    const T* ep = e.data<T>();
    T* o = out->data<T>();
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t oc = 0, ot = 0, oe = 0;
        for (int64_t rest = row, i = rank - 2; i >= 0; --i) {
          const int64_t index = rest % shape.dim_size(static_cast<int>(i));
          rest /= shape.dim_size(static_cast<int>(i));
          oc += index * sc[i];
          ot += index * st[i];
          oe += index * se[i];
        }
        T* dst = o + row * width;
        const int64_t dc = sc[rank - 1], dt = st[rank - 1], de = se[rank - 1];
        for (int64_t j = 0; j < width; ++j) {
          dst[j] = c[oc + j * dc] ? tp[ot + j * dt] : ep[oe + j * de];
        }
      }
    };
    if (out->NumElements() < kMinParallelElements) {
      run(0, rows);
    } else {
      ParallelFor(context, rows, static_cast<double>(width) * 3 + 4 * rank, run);
    }
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<SelectV2Op<T>>(KernelDef("SelectV2", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterSelectKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
  RegisterForType<uint8_t>(registry);
  RegisterForType<bool>(registry);
}

}  // namespace weft::kernels
