// CPU kernel for Cast between float32, float64, int32, int64, uint8 and bool, with C++
// conversion rules (to bool: nonzero is true). A cast to the same type forwards the input buffer.
#include "weft/framework/node_def_util.h"
#include "weft/kernels/math/device_eval.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

using CastFn = void (*)(OpKernelContext* context, const Tensor& in, Tensor* out);

template <typename Src, typename Dst>
void CastElements(OpKernelContext* context, const Tensor& in, Tensor* out) {
  auto x = Flat<Src>(in);
  auto y = Flat<Dst>(*out);
  EvaluateOnDevice(context, in.NumElements(),
                   [&](const auto& d) { y.device(d) = x.template cast<Dst>(); });
}

template <typename Src>
class CastOp final : public OpKernel {
 public:
  explicit CastOp(OpKernelConstruction* context) : OpKernel(context) {
    DataType dst = DataType::kInvalid;
    context->SetStatus(context->GetAttr("DstT", &dst));
    bool known = VisitNumericType(dst, [this]<typename Dst>() { cast_ = &CastElements<Src, Dst>; });
    if (!known) {
      context->SetStatus(
          InvalidArgument(FormatNodeForError(def()), ": cannot cast to ", DataTypeName(dst)));
    }
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    if (input_type(0) == output_type(0)) return context->SetOutput(0, x);
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, x.shape(), &out));
    cast_(context, x, out);
    return Status::OK();
  }

 private:
  CastFn cast_ = nullptr;
};

template <typename Src>
void RegisterForSource(KernelRegistry& registry) {
  registry.Register<CastOp<Src>>(KernelDef("Cast", "CPU").TypeConstraint<Src>("SrcT"));
}

}  // namespace

void RegisterCastKernels(KernelRegistry& registry) {
  RegisterForSource<float>(registry);
  RegisterForSource<double>(registry);
  RegisterForSource<int32_t>(registry);
  RegisterForSource<int64_t>(registry);
  RegisterForSource<uint8_t>(registry);
  RegisterForSource<bool>(registry);
}

}  // namespace weft::kernels
