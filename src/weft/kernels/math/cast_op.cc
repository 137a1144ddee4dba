// CPU kernel for Cast between float32, float64, int32, int64, uint8, bool and bfloat16, with C++
// conversion rules (to bool: nonzero is true; to and from bfloat16 through float32, rounding to
// nearest even). A cast to the same type forwards the input buffer.
#include <type_traits>

#include "weft/core/bfloat16.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/math/device_eval.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

using CastFn = void (*)(OpKernelContext* context, const Tensor& in, Tensor* out);

// out[i] = in[i] for casts to or from bfloat16, which Eigen's cast does not know. float32 <->
// bfloat16 runs every step of mixed precision, so it takes the vectorised converters.
template <typename Src, typename Dst>
void CastBFloat16Elements(const Src* in, Dst* out, int64_t n) {
  if constexpr (std::is_same_v<Src, float> && std::is_same_v<Dst, bfloat16>) {
    FloatToBFloat16({in, static_cast<size_t>(n)}, out);
  } else if constexpr (std::is_same_v<Src, bfloat16> && std::is_same_v<Dst, float>) {
    BFloat16ToFloat({in, static_cast<size_t>(n)}, out);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Dst>(in[i]);
  }
}

template <typename Src, typename Dst>
void CastElements(OpKernelContext* context, const Tensor& in, Tensor* out) {
  if constexpr (std::is_same_v<Src, bfloat16> || std::is_same_v<Dst, bfloat16>) {
    const Src* x = in.data<Src>();
    Dst* y = out->data<Dst>();
    const int64_t n = in.NumElements();
    if (n < kMinParallelElements) return CastBFloat16Elements(x, y, n);
    // About a cycle an element: shards of tens of thousands of elements.
    ParallelFor(context, n, 1.0, [x, y](int64_t begin, int64_t end) {
      CastBFloat16Elements(x + begin, y + begin, end - begin);
    });
  } else {
    auto x = Flat<Src>(in);
    auto y = Flat<Dst>(*out);
    EvaluateOnDevice(context, in.NumElements(),
                     [&](const auto& d) { y.device(d) = x.template cast<Dst>(); });
  }
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
  RegisterForSource<bfloat16>(registry);
}

}  // namespace weft::kernels
