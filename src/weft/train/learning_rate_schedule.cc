#include "weft/train/learning_rate_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string_view>

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

// InvalidArgument naming `what` unless `rate` is a finite rate >= 0.
Status CheckRate(std::string_view schedule, std::string_view what, double rate) {
  if (std::isfinite(rate) && rate >= 0) return Status::OK();
  return InvalidArgument(schedule, ": ", what, " must be finite and non-negative, got ", rate);
}

// cos(pi * f) for a float64 `f` in [0, 1], as -sin(y) with y = pi * (f - 1/2) in [-pi/2, pi/2]
// and sin's Taylor series to y^21: its first omitted term, (pi/2)^23 / 23!, is below 1e-17, so
// the result is std::cos's to rounding. (Weft has no Cos op; a schedule needs one scalar.)
Output CosPi(const Scope& scope, const Output& f) {
  const Output y =
      ops::Mul(scope, ops::Sub(scope, f, 0.5), ops::Const(scope, std::numbers::pi_v<double>));
  const Output z = ops::Mul(scope, y, y);
  // sin(y) = y * sum_k (-1)^k z^k / (2k + 1)!, by Horner's rule from k = 10 down.
  double coefficients[11];
  double factorial = 1;
  for (int k = 0; k <= 10; ++k) {
    if (k > 0) factorial *= (2.0 * k) * (2.0 * k + 1);
    coefficients[k] = (k % 2 == 0 ? 1.0 : -1.0) / factorial;
  }
  Output sum = ops::Const(scope, coefficients[10]);
  for (int k = 9; k >= 0; --k) sum = ops::Add(scope, ops::Mul(scope, sum, z), coefficients[k]);
  return ops::Neg(scope, ops::Mul(scope, y, sum));
}

}  // namespace

StatusOr<std::shared_ptr<const LearningRateSchedule>> LinearWarmup::Create(
    const LinearWarmupOptions& options, std::shared_ptr<const LearningRateSchedule> after) {
  if (options.warmup_steps <= 0) {
    return InvalidArgument("LinearWarmup: warmup_steps must be positive, got ",
                           options.warmup_steps);
  }
  WEFT_RETURN_IF_ERROR(
      CheckRate("LinearWarmup", "initial_learning_rate", options.initial_learning_rate));
  WEFT_RETURN_IF_ERROR(CheckRate("LinearWarmup", "target", options.target));
  return std::shared_ptr<const LearningRateSchedule>(new LinearWarmup(options, std::move(after)));
}

double LinearWarmup::ValueAt(int64_t step) const {
  const LinearWarmupOptions& o = options_;
  if (step < o.warmup_steps) {
    const double fraction = static_cast<double>(step) / static_cast<double>(o.warmup_steps);
    return (o.target - o.initial_learning_rate) * fraction + o.initial_learning_rate;
  }
  return after_ != nullptr ? after_->ValueAt(step - o.warmup_steps) : o.target;
}

Output LinearWarmup::Build(const Scope& scope, const Output& step) const {
  const LinearWarmupOptions& o = options_;
  const Scope s = scope.NewSubScope("linear_warmup");
  const int64_t warmup = o.warmup_steps;
  const Output fraction = ops::Div(s, ops::Cast(s, step, DataType::kDouble),
                                   ops::Const(s, static_cast<double>(warmup)));
  const Output rising = ops::Add(s, ops::Mul(s, fraction, o.target - o.initial_learning_rate),
                                 o.initial_learning_rate);
  // Both branches are built and one is selected: each is finite at every step.
  const Output rest = after_ != nullptr
                          ? after_->Build(s, ops::Maximum(s, ops::Sub(s, step, warmup), int64_t{0}))
                          : ops::Const(s, o.target);
  return ops::SelectV2(s, ops::Less(s, step, warmup), rising, rest);
}

std::string LinearWarmup::DebugString() const {
  return StrCat("LinearWarmup(warmup_steps=", options_.warmup_steps,
                ", initial_learning_rate=", options_.initial_learning_rate,
                ", target=", options_.target, ")",
                after_ != nullptr ? StrCat(" then ", after_->DebugString()) : "");
}

StatusOr<std::shared_ptr<const LearningRateSchedule>> CosineDecay::Create(
    const CosineDecayOptions& options) {
  WEFT_RETURN_IF_ERROR(
      CheckRate("CosineDecay", "initial_learning_rate", options.initial_learning_rate));
  if (options.decay_steps <= 0) {
    return InvalidArgument("CosineDecay: decay_steps must be positive, got ", options.decay_steps);
  }
  if (!(options.alpha >= 0 && options.alpha <= 1)) {
    return InvalidArgument("CosineDecay: alpha must be in [0, 1], got ", options.alpha);
  }
  if (options.warmup_steps < 0) {
    return InvalidArgument("CosineDecay: warmup_steps must not be negative, got ",
                           options.warmup_steps);
  }
  if (options.warmup_steps > 0 && !options.warmup_target.has_value()) {
    return InvalidArgument("CosineDecay: warmup_steps (", options.warmup_steps,
                           ") needs a warmup_target, the rate the warmup rises to");
  }
  if (options.warmup_target.has_value()) {
    WEFT_RETURN_IF_ERROR(CheckRate("CosineDecay", "warmup_target", *options.warmup_target));
  }
  const double decay_from = options.warmup_target.value_or(options.initial_learning_rate);
  std::shared_ptr<const LearningRateSchedule> decay(
      new CosineDecay(decay_from, options.decay_steps, options.alpha));
  if (options.warmup_steps == 0) return decay;
  return LinearWarmup::Create({.warmup_steps = options.warmup_steps,
                               .initial_learning_rate = options.initial_learning_rate,
                               .target = decay_from},
                              std::move(decay));
}

double CosineDecay::ValueAt(int64_t step) const {
  const double fraction =
      static_cast<double>(std::min(step, decay_steps_)) / static_cast<double>(decay_steps_);
  const double cosine = 0.5 * (1 + std::cos(std::numbers::pi_v<double> * fraction));
  return ((1 - alpha_) * cosine + alpha_) * initial_learning_rate_;
}

Output CosineDecay::Build(const Scope& scope, const Output& step) const {
  const Scope s = scope.NewSubScope("cosine_decay");
  const Output fraction =
      ops::Div(s, ops::Cast(s, ops::Minimum(s, step, decay_steps_), DataType::kDouble),
               ops::Const(s, static_cast<double>(decay_steps_)));
  const Output cosine = ops::Mul(s, ops::Add(s, CosPi(s, fraction), 1.0), 0.5);
  return ops::Mul(s, ops::Add(s, ops::Mul(s, cosine, 1 - alpha_), alpha_), initial_learning_rate_);
}

std::string CosineDecay::DebugString() const {
  return StrCat("CosineDecay(initial_learning_rate=", initial_learning_rate_,
                ", decay_steps=", decay_steps_, ", alpha=", alpha_, ")");
}

StatusOr<std::shared_ptr<const LearningRateSchedule>> WarmupCosineDecay(
    const WarmupCosineOptions& options) {
  constexpr std::string_view kWhat = "WarmupCosineDecay";
  if (!(std::isfinite(options.peak) && options.peak > 0)) {
    return InvalidArgument(kWhat, ": peak must be finite and positive, got ", options.peak);
  }
  WEFT_RETURN_IF_ERROR(CheckRate(kWhat, "initial_learning_rate", options.initial_learning_rate));
  WEFT_RETURN_IF_ERROR(CheckRate(kWhat, "final_learning_rate", options.final_learning_rate));
  if (options.final_learning_rate > options.peak) {
    return InvalidArgument(kWhat, ": final_learning_rate (", options.final_learning_rate,
                           ") must not exceed peak (", options.peak, ")");
  }
  if (options.warmup_steps < 0) {
    return InvalidArgument(kWhat, ": warmup_steps must not be negative, got ",
                           options.warmup_steps);
  }
  if (options.warmup_steps >= options.total_steps) {
    return InvalidArgument(kWhat, ": warmup_steps (", options.warmup_steps,
                           ") must be less than total_steps (", options.total_steps,
                           "), the step the decay ends at");
  }
  return CosineDecay::Create({.initial_learning_rate = options.initial_learning_rate,
                              .decay_steps = options.total_steps - options.warmup_steps,
                              .alpha = options.final_learning_rate / options.peak,
                              .warmup_steps = options.warmup_steps,
                              .warmup_target = options.peak});
}

}  // namespace weft::train
