#include "weft/data/zipf_distribution.h"

#include "weft/core/status.h"

namespace weft::data {
namespace {

// log(1 + x) / x and (exp(x) - 1) / x, continuous at 0: they keep H and its inverse accurate when
// the exponent is near 1, where (1 - s) is tiny.
double Log1pOverX(double x) { return std::abs(x) < 1e-8 ? 1 - x / 2 : std::log1p(x) / x; }
double Expm1OverX(double x) { return std::abs(x) < 1e-8 ? 1 + x / 2 : std::expm1(x) / x; }

}  // namespace

StatusOr<ZipfDistribution> ZipfDistribution::Make(int64_t n, double exponent) {
  if (n < 1) return InvalidArgument("a Zipf distribution needs at least one value, got n = ", n);
  if (!(exponent > 0) || !std::isfinite(exponent)) {
    return InvalidArgument("a Zipf distribution's exponent must be positive and finite, got ",
                           exponent);
  }
  return ZipfDistribution(n, exponent);
}

ZipfDistribution::ZipfDistribution(int64_t n, double exponent) : n_(n), exponent_(exponent) {
  h_x1_ = HIntegral(1.5) - 1;
  h_n_ = HIntegral(static_cast<double>(n) + 0.5);
  s_ = 2 - HIntegralInverse(HIntegral(2.5) - H(2));
}

double ZipfDistribution::HIntegral(double x) const {
  const double log_x = std::log(x);
  return Expm1OverX((1 - exponent_) * log_x) * log_x;
}

double ZipfDistribution::HIntegralInverse(double u) const {
  double t = u * (1 - exponent_);
  if (t < -1) t = -1;  // rounding can step just outside H's range; -1 maps to x = 0
  return std::exp(Log1pOverX(t) * u);
}

}  // namespace weft::data
