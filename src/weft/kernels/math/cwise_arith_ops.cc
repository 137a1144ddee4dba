// CPU kernels for Add, Sub and Mul (float32, float64, int32, int64), with broadcasting.
#include "weft/kernels/math/cwise_binary_op.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

template <typename T>
struct AddFunctor {
  using Out = T;
  template <typename X, typename Y>
  static auto Apply(const X& x, const Y& y) {
    return x + y;
  }
};

template <typename T>
struct SubFunctor {
  using Out = T;
  template <typename X, typename Y>
  static auto Apply(const X& x, const Y& y) {
    return x - y;
  }
};

template <typename T>
struct MulFunctor {
  using Out = T;
  template <typename X, typename Y>
  static auto Apply(const X& x, const Y& y) {
    return x * y;
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<BinaryOp<T, AddFunctor<T>>>(KernelDef("Add", "CPU").TypeConstraint<T>("T"));
  registry.Register<BinaryOp<T, SubFunctor<T>>>(KernelDef("Sub", "CPU").TypeConstraint<T>("T"));
  registry.Register<BinaryOp<T, MulFunctor<T>>>(KernelDef("Mul", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterCwiseArithKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
}

}  // namespace weft::kernels
