// The GELU formulas on a scalar or an Eigen packet, and the Gelu and GeluGrad element functors
// built on them (with their Eigen traits): shared by the Gelu kernels (gelu_ops.cc) and the fused
// bias-gradient kernel (fused_bias_add_grad_op.cc), so that fused and unfused graphs compute the
// same values. Include only from kernel .cc files. Stateless; thread-safe.
#pragma once

#include <type_traits>

#include "weft/kernels/eigen_support.h"

namespace weft::kernels::gelu {

inline constexpr double kSqrtHalf = 0.70710678118654752440;     // 1 / sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
inline constexpr double kCubic = 0.044715;
// Beyond |x| = 100 the terms that x multiplies (phi(x), sigmoid(2u) (1 - sigmoid(2u)), and
// sigmoid(2u) itself for x < 0) are 0 in float and double (see ExpNeg), so x is clamped to it
// inside them: the same values, and no x^2 or x^3 overflowing to inf (inf * 0 would be NaN).
inline constexpr double kSaturated = 100;

// The formulas once, for a scalar T or an Eigen packet of T (P). With Phi and phi the standard
// normal CDF and density, and u = sqrt(2/pi) (x + 0.044715 x^3):
//   exact:       gelu(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))    gelu'(x) = Phi(x) + x phi(x)
//   approximate: gelu(x) = 0.5 x (1 + tanh u), computed as the equal x sigmoid(2u) (Sigmoid2U)
template <typename T>
struct GeluMath {
  template <typename P>
  static P C(double value) {
    return Eigen::internal::pset1<P>(static_cast<T>(value));
  }

  template <typename P>
  static P Clamp(const P& x) {
    return Eigen::internal::pmin(Eigen::internal::pmax(x, C<P>(-kSaturated)), C<P>(kSaturated));
  }

  // exp(-a) for a >= 0, and exactly 0 where it leaves T's normal range: Eigen's packet exp clamps
  // its argument there (near -88 in float, -709 in double) and returns a tiny nonzero value
  // instead, which x = -1e30 would scale up to about -1e-9.
  template <typename P>
  static P ExpNeg(const P& a) {
    using namespace Eigen::internal;
    constexpr double kUnderflow = std::is_same_v<T, float> ? 87 : 708;
    return pselect(pcmp_lt(C<P>(kUnderflow), a), pzero(a), pexp(pnegate(a)));
  }

  // Phi(x) = 0.5 + 0.5 erf(x / sqrt 2).
  template <typename P>
  static P Phi(const P& x) {
    using namespace Eigen::internal;
    return pmadd(perf(pmul(x, C<P>(kSqrtHalf))), C<P>(0.5), C<P>(0.5));
  }

  // x phi(x), on x clamped.
  template <typename P>
  static P XPhi(const P& x) {
    using namespace Eigen::internal;
    const P xc = Clamp(x);
    return pmul(pmul(xc, C<P>(kInvSqrt2Pi)), ExpNeg(pmul(pmul(xc, xc), C<P>(0.5))));
  }

  // For z = 2u: sigmoid(z) = (1 + tanh u) / 2 and sigmoid(z) (1 - sigmoid(z)) = (1 - tanh^2 u) / 4,
  // through e = exp(-|z|) <= 1 and r = 1 / (1 + e): sigmoid(z) = r for z >= 0, e r below, and
  // sigmoid(z) (1 - sigmoid(z)) = e r^2 on both sides. Unlike 1 + tanh u these keep their relative
  // precision where x < 0 (float's 1 + tanh u loses all of it by x = -4). Computed on x clamped,
  // which it also returns.
  template <typename P>
  struct Sigmoid2U {
    P sigmoid;        // sigmoid(2u)
    P sigmoid_slope;  // sigmoid(2u) (1 - sigmoid(2u))
    P xc;             // x clamped
  };
  template <typename P>
  static Sigmoid2U<P> Sigmoid(const P& x) {
    using namespace Eigen::internal;
    const P xc = Clamp(x);
    const P xc2 = pmul(xc, xc);
    const P z = pmul(pmul(pmadd(xc2, C<P>(kCubic), C<P>(1)), xc), C<P>(2 * kSqrt2OverPi));
    const P e = ExpNeg(pabs(z));
    const P r = pdiv(C<P>(1), padd(C<P>(1), e));
    const P sigmoid = pmul(pselect(pcmp_le(pzero(z), z), C<P>(1), e), r);
    return {sigmoid, pmul(e, pmul(r, r)), xc};
  }

  // gelu(x).
  template <bool kApproximate, typename P>
  static P Value(const P& x) {
    using namespace Eigen::internal;
    if constexpr (kApproximate) {
      return pmul(x, Sigmoid(x).sigmoid);
    } else {
      return pmul(x, Phi(x));
    }
  }

  // gelu'(x). Approximate: d/dx [x sigmoid(2u)] = s + 2 x s (1 - s) du/dx, s = sigmoid(2u),
  // du/dx = sqrt(2/pi) (1 + 3 0.044715 x^2).
  template <bool kApproximate, typename P>
  static P Slope(const P& x) {
    using namespace Eigen::internal;
    if constexpr (kApproximate) {
      const Sigmoid2U<P> s = Sigmoid(x);
      const P two_du =
          pmul(pmadd(pmul(s.xc, s.xc), C<P>(3 * kCubic), C<P>(1)), C<P>(2 * kSqrt2OverPi));
      return pmadd(pmul(s.xc, s.sigmoid_slope), two_du, s.sigmoid);
    } else {
      return padd(Phi(x), XPhi(x));
    }
  }
};

template <typename T, bool kApproximate>
struct GeluFunctor {
  T operator()(const T& x) const { return GeluMath<T>::template Value<kApproximate>(x); }
  template <typename P>
  P packetOp(const P& x) const {
    return GeluMath<T>::template Value<kApproximate>(x);
  }
};

// (gradients, features) -> gradients * gelu'(features).
template <typename T, bool kApproximate>
struct GeluGradFunctor {
  T operator()(const T& g, const T& x) const {
    return g * GeluMath<T>::template Slope<kApproximate>(x);
  }
  template <typename P>
  P packetOp(const P& g, const P& x) const {
    return Eigen::internal::pmul(g, GeluMath<T>::template Slope<kApproximate>(x));
  }
};

}  // namespace weft::kernels::gelu

namespace Eigen::internal {

// The packet path needs erf (exact form) or exp, compare and divide (approximate form) on packets
// of T; Eigen has packet erf for float only, so the exact form in double takes the scalar path
// (std::erf).
template <typename T, bool kApproximate>
struct functor_traits<weft::kernels::gelu::GeluFunctor<T, kApproximate>> {
  enum {
    Cost = 40 * NumTraits<T>::MulCost,
    PacketAccess =
        static_cast<bool>(kApproximate ? packet_traits<T>::HasExp && packet_traits<T>::HasDiv &&
                                             packet_traits<T>::HasCmp
                                       : static_cast<bool>(packet_traits<T>::HasErf)),
  };
};
template <typename T, bool kApproximate>
struct functor_traits<weft::kernels::gelu::GeluGradFunctor<T, kApproximate>> {
  enum {
    Cost = 50 * NumTraits<T>::MulCost,
    PacketAccess = packet_traits<T>::HasExp && packet_traits<T>::HasDiv &&
                   packet_traits<T>::HasCmp && (kApproximate || packet_traits<T>::HasErf),
  };
};

}  // namespace Eigen::internal
