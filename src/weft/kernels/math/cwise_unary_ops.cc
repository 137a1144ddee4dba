// CPU kernels for the elementwise unary ops: Neg, Square, Abs and Sign (float32, float64, int32,
// int64); Sqrt, Rsqrt, Exp, Log, Log1p, Reciprocal and Erf (float32, float64). The output reuses
// the input's buffer when no one else holds it.
#include "weft/kernels/math/device_eval.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

template <typename T, typename Functor>
class UnaryOp final : public OpKernel {
 public:
  explicit UnaryOp(OpKernelConstruction* context) : OpKernel(context) {}

  Status Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->ForwardInputOrAllocateOutput({0}, 0, x.shape(), &out));
    auto xf = Flat<T>(x);
    auto o = Flat<T>(*out);
    EvaluateOnDevice(context, x.NumElements(),
                     [&](const auto& d) { o.device(d) = Functor::Apply(xf); });
    return Status::OK();
  }
};

struct NegFunctor {
  static auto Apply(const auto& x) { return -x; }
};
struct SquareFunctor {
  static auto Apply(const auto& x) { return x.square(); }
};
struct SqrtFunctor {
  static auto Apply(const auto& x) { return x.sqrt(); }
};
struct ExpFunctor {
  static auto Apply(const auto& x) { return x.exp(); }
};
struct LogFunctor {
  static auto Apply(const auto& x) { return x.log(); }
};
struct ReciprocalFunctor {
  static auto Apply(const auto& x) { return x.inverse(); }
};
struct AbsFunctor {
  static auto Apply(const auto& x) { return x.abs(); }
};
struct SignFunctor {
  static auto Apply(const auto& x) { return x.sign(); }
};
struct RsqrtFunctor {
  static auto Apply(const auto& x) { return x.rsqrt(); }
};
struct Log1pFunctor {
  static auto Apply(const auto& x) { return x.log1p(); }
};
// Eigen's erf: a vectorised rational approximation for float, std::erf for double.
struct ErfFunctor {
  static auto Apply(const auto& x) { return x.erf(); }
};

template <typename T, typename Functor>
void RegisterUnary(KernelRegistry& registry, const char* op) {
  registry.Register<UnaryOp<T, Functor>>(KernelDef(op, "CPU").TypeConstraint<T>("T"));
}

template <typename T>
void RegisterForAllTypes(KernelRegistry& registry) {
  RegisterUnary<T, NegFunctor>(registry, "Neg");
  RegisterUnary<T, SquareFunctor>(registry, "Square");
  RegisterUnary<T, AbsFunctor>(registry, "Abs");
  RegisterUnary<T, SignFunctor>(registry, "Sign");
}

template <typename T>
void RegisterForFloatTypes(KernelRegistry& registry) {
  RegisterForAllTypes<T>(registry);
  RegisterUnary<T, SqrtFunctor>(registry, "Sqrt");
  RegisterUnary<T, ExpFunctor>(registry, "Exp");
  RegisterUnary<T, LogFunctor>(registry, "Log");
  RegisterUnary<T, ReciprocalFunctor>(registry, "Reciprocal");
  RegisterUnary<T, RsqrtFunctor>(registry, "Rsqrt");
  RegisterUnary<T, Log1pFunctor>(registry, "Log1p");
  RegisterUnary<T, ErfFunctor>(registry, "Erf");
}

}  // namespace

void RegisterCwiseUnaryKernels(KernelRegistry& registry) {
  RegisterForFloatTypes<float>(registry);
  RegisterForFloatTypes<double>(registry);
  RegisterForAllTypes<int32_t>(registry);
  RegisterForAllTypes<int64_t>(registry);
}

}  // namespace weft::kernels
