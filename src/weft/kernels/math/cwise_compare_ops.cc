// CPU kernels for the orderings Less, LessEqual, Greater and GreaterEqual (float32, float64,
// int32, int64 -> bool), with broadcasting. A comparison with NaN is false, as in C++.
#include "weft/kernels/math/cwise_binary_op.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

template <typename T, Eigen::internal::ComparisonName kCmp>
struct CompareFunctor {
  using Out = bool;
  template <typename X, typename Y>
  static auto Apply(const X& x, const Y& y) {
    // Spelled out as in Equal's kernel: one functor template serves all four orderings.
    return x.binaryExpr(y, Eigen::internal::scalar_cmp_op<T, T, kCmp>());
  }
};

template <typename T, Eigen::internal::ComparisonName kCmp>
void RegisterCompare(KernelRegistry& registry, const char* op) {
  registry.Register<BinaryOp<T, CompareFunctor<T, kCmp>>>(
      KernelDef(op, "CPU").TypeConstraint<T>("T"));
}

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  using Eigen::internal::ComparisonName;
  RegisterCompare<T, ComparisonName::cmp_LT>(registry, "Less");
  RegisterCompare<T, ComparisonName::cmp_LE>(registry, "LessEqual");
  RegisterCompare<T, ComparisonName::cmp_GT>(registry, "Greater");
  RegisterCompare<T, ComparisonName::cmp_GE>(registry, "GreaterEqual");
}

}  // namespace

void RegisterCwiseCompareKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
}

}  // namespace weft::kernels
