// CPU kernel for Equal (float32, float64, int32, int64, bool -> bool), with broadcasting.
#include "weft/kernels/math/cwise_binary_op.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

template <typename T>
struct EqualFunctor {
  using Out = bool;
  template <typename X, typename Y>
  static auto Apply(const X& x, const Y& y) {
    // Spelled out: C++20's reversed candidates make Eigen's operator== ambiguous under clang.
    return x.binaryExpr(y, Eigen::internal::scalar_cmp_op<T, T, Eigen::internal::cmp_EQ>());
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<BinaryOp<T, EqualFunctor<T>>>(KernelDef("Equal", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterCwiseEqualKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
  RegisterForType<bool>(registry);
}

}  // namespace weft::kernels
