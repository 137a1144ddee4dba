// CPU kernel for AddN (float32, float64, int32, int64): the elementwise sum of N same-shaped
// tensors, summed a few inputs per pass over the output so memory is read as few times as
// possible. The output reuses input 0's buffer when no one else holds it.
#include <algorithm>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/math/device_eval.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

template <typename T>
class AddNOp final : public OpKernel {
 public:
  explicit AddNOp(OpKernelConstruction* context) : OpKernel(context) {}

  Status Compute(OpKernelContext* context) override {
    const int n = context->num_inputs();
    const Tensor& first = context->input(0);
    for (int i = 1; i < n; ++i) {
      if (!(context->input(i).shape() == first.shape())) {
        return InvalidArgument(FormatNodeForError(def()),
                               ": all inputs must have the same shape, but input 0 is ",
                               first.shape(), " and input ", i, " is ", context->input(i).shape());
      }
    }
    if (n == 1) return context->SetOutput(0, first);
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->ForwardInputOrAllocateOutput({0}, 0, first.shape(), &out));
    const int64_t size = out->NumElements();
    if (size == 0) return Status::OK();
    auto o = Flat<T>(*out);
    auto in = [&](int i) { return Flat<T>(context->input(i)); };
    EvaluateOnDevice(context, size * n, [&](const auto& d) {
      // First pass: up to four inputs into the output; then up to three more per pass.
      switch (std::min(n, 4)) {
        case 2:
          o.device(d) = in(0) + in(1);
          break;
        case 3:
          o.device(d) = in(0) + in(1) + in(2);
          break;
        default:
          o.device(d) = in(0) + in(1) + in(2) + in(3);
          break;
      }
      for (int i = 4; i < n; i += 3) {
        switch (std::min(n - i, 3)) {
          case 1:
            o.device(d) = o + in(i);
            break;
          case 2:
            o.device(d) = o + in(i) + in(i + 1);
            break;
          default:
            o.device(d) = o + in(i) + in(i + 1) + in(i + 2);
            break;
        }
      }
    });
    return Status::OK();
  }
};

}  // namespace

void RegisterAddNKernels(KernelRegistry& registry) {
  registry.Register<AddNOp<float>>(KernelDef("AddN", "CPU").TypeConstraint<float>("T"));
  registry.Register<AddNOp<double>>(KernelDef("AddN", "CPU").TypeConstraint<double>("T"));
  registry.Register<AddNOp<int32_t>>(KernelDef("AddN", "CPU").TypeConstraint<int32_t>("T"));
  registry.Register<AddNOp<int64_t>>(KernelDef("AddN", "CPU").TypeConstraint<int64_t>("T"));
}

}  // namespace weft::kernels
