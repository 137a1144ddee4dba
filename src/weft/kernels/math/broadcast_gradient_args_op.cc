// CPU kernel for BroadcastGradientArgs (int32, int64): given the shapes s0 and s1 of a
// broadcasting binary op's inputs, the output axes each input's gradient must be summed over
// (see BroadcastGradientAxes in bcast.h).
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/math/bcast.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

template <typename T>
class BroadcastGradientArgsOp final : public OpKernel {
 public:
  explicit BroadcastGradientArgsOp(OpKernelConstruction* context) : OpKernel(context) {}

  Status Compute(OpKernelContext* context) override {
    std::vector<int64_t> shapes[2];
    for (int i = 0; i < 2; ++i) {
      const Tensor& s = context->input(i);
      if (s.dims() != 1) {
        return InvalidArgument(FormatNodeForError(def()), ": s", i,
                               " must be a vector, but has shape ", s.shape());
      }
      for (T d : s.flat<T>()) {
        if (d < 0) {
          return InvalidArgument(FormatNodeForError(def()), ": s", i, " has a negative dimension ",
                                 d);
        }
        shapes[i].push_back(d);
      }
    }
    StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> axes =
        BroadcastGradientAxes(shapes[0], shapes[1]);
    if (!axes.ok()) return axes.status().WithContext(FormatNodeForError(def()));
    WEFT_RETURN_IF_ERROR(SetAxes(context, 0, axes->first));
    return SetAxes(context, 1, axes->second);
  }
  bool IsCheap() const override { return true; }

 private:
  static Status SetAxes(OpKernelContext* context, int index, const std::vector<int64_t>& axes) {
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(
        context->AllocateOutput(index, TensorShape({static_cast<int64_t>(axes.size())}), &out));
    T* data = out->data<T>();
    for (size_t i = 0; i < axes.size(); ++i) data[i] = static_cast<T>(axes[i]);
    return Status::OK();
  }
};

}  // namespace

void RegisterBroadcastGradientArgsKernels(KernelRegistry& registry) {
  registry.Register<BroadcastGradientArgsOp<int32_t>>(
      KernelDef("BroadcastGradientArgs", "CPU").TypeConstraint<int32_t>("T"));
  registry.Register<BroadcastGradientArgsOp<int64_t>>(
      KernelDef("BroadcastGradientArgs", "CPU").TypeConstraint<int64_t>("T"));
}

}  // namespace weft::kernels
