// ZipfDistribution: draws k in [1, n] with probability proportional to 1 / k^s (s > 0, s != 1 or
// s == 1), in constant expected time whatever n is, by rejection-inversion (Hörmann and Derflinger,
// "Rejection-inversion to generate variates from monotone discrete distributions", 1996): a
// continuous hat function is inverted and the rare draws above the discrete mass are rejected.
// Used for the skewed categorical ids of W7. Immutable after construction; thread-compatible (each
// thread passes its own generator).
#pragma once

#include <cmath>
#include <cstdint>

#include "weft/core/statusor.h"

namespace weft::data {

class ZipfDistribution {
 public:
  // InvalidArgument unless n >= 1 and s > 0 (and both finite).
  static StatusOr<ZipfDistribution> Make(int64_t n, double exponent);

  int64_t n() const { return n_; }
  double exponent() const { return exponent_; }

  // One draw in [1, n]. `uniform` returns doubles uniform in [0, 1).
  template <typename Uniform>
  int64_t operator()(Uniform&& uniform) const {
    while (true) {
      const double u = h_n_ + uniform() * (h_x1_ - h_n_);
      const double x = HIntegralInverse(u);
      int64_t k = static_cast<int64_t>(x + 0.5);
      if (k < 1) k = 1;
      if (k > n_) k = n_;
      // Accept k when u falls under the mass of k; the squeeze `k - x <= s_` accepts most draws
      // without evaluating the integral.
      if (k - x <= s_ || u >= HIntegral(k + 0.5) - H(k)) return k;
    }
  }

 private:
  ZipfDistribution(int64_t n, double exponent);

  // H(x) = integral of 1/t^s from 1 to x (log x at s == 1), its inverse, and h(x) = 1/x^s.
  double HIntegral(double x) const;
  double HIntegralInverse(double u) const;
  double H(double x) const { return std::exp(-exponent_ * std::log(x)); }

  int64_t n_;
  double exponent_;
  double h_x1_;  // HIntegral(1.5) - 1: the hat's upper end
  double h_n_;   // HIntegral(n + 0.5): its lower end
  double s_;     // the squeeze constant
};

}  // namespace weft::data
