// CPU kernels for Div, Maximum and Minimum (float32, float64, int32, int64), with broadcasting.
// Integer division truncates toward zero; a zero divisor is an InvalidArgument naming the node,
// and lowest / -1 wraps instead of trapping. Maximum and Minimum propagate NaN.
#include <limits>
#include <type_traits>

#include "weft/kernels/math/cwise_binary_op.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

// a / b for integers with b != 0 (checked before): -1 negates with wrap-around, so that
// lowest / -1 gives lowest rather than a hardware trap.
template <typename T>
struct TruncatingDivOp {
  T operator()(T a, T b) const {
    if (b == -1)
      return static_cast<T>(std::make_unsigned_t<T>{0} - static_cast<std::make_unsigned_t<T>>(a));
    return a / b;
  }
};

template <typename T>
struct DivFunctor {
  using Out = T;
  template <typename X, typename Y>
  static auto Apply(const X& x, const Y& y) {
    if constexpr (std::is_integral_v<T>) {
      return x.binaryExpr(y, TruncatingDivOp<T>());
    } else {
      return x / y;
    }
  }
  static Status Validate(const OpKernel& kernel, const Tensor& /*x*/, const Tensor& y) {
    if constexpr (std::is_integral_v<T>) {
      for (T v : y.flat<T>()) {
        if (v == 0) {
          return InvalidArgument(FormatNodeForError(kernel.def()), ": integer division by zero");
        }
      }
    }
    return Status::OK();
  }
};

template <typename T>
struct MaximumFunctor {
  using Out = T;
  template <typename X, typename Y>
  static auto Apply(const X& x, const Y& y) {
    if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
      return x.template cwiseMax<Eigen::PropagateNaN>(y);
    } else {
      return x.cwiseMax(y);
    }
  }
};

template <typename T>
struct MinimumFunctor {
  using Out = T;
  template <typename X, typename Y>
  static auto Apply(const X& x, const Y& y) {
    if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
      return x.template cwiseMin<Eigen::PropagateNaN>(y);
    } else {
      return x.cwiseMin(y);
    }
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<BinaryOp<T, DivFunctor<T>>>(KernelDef("Div", "CPU").TypeConstraint<T>("T"));
  registry.Register<BinaryOp<T, MaximumFunctor<T>>>(
      KernelDef("Maximum", "CPU").TypeConstraint<T>("T"));
  registry.Register<BinaryOp<T, MinimumFunctor<T>>>(
      KernelDef("Minimum", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterCwiseDivMaxKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
}

}  // namespace weft::kernels
