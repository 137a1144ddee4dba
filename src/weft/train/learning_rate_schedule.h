// Learning-rate schedules: the learning rate as a function of the optimizer's step, after the
// reference's tf.keras.optimizers.schedules. A schedule is evaluated in the training graph from the
// optimizer's "iterations" counter (Optimizer::SetLearningRateSchedule), so it costs no extra
// session run, every step of an execution unrolled by steps_per_execution sees its own step, and a
// run resumed from a checkpoint (which holds the counter) continues where it stopped. ValueAt gives
// the same rate in C++, for logs and tests.
//
//   // W6: linear warmup from 0 to 1e-3 over 100 steps, cosine to 1e-4 at step 2,000, then 1e-4.
//   auto schedule = WarmupCosineDecay({.peak = 1e-3, .final_learning_rate = 1e-4,
//                                      .warmup_steps = 100, .total_steps = 2000}).value();
//   optimizer->SetLearningRateSchedule(schedule);
//
// Step s is the number of updates made before the one that uses the rate, so the first update
// uses ValueAt(0) (0 under a warmup from 0, as in the reference). Schedules are immutable after
// Create: share them freely and call them from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "weft/core/statusor.h"
#include "weft/graph/builder/ops.h"

namespace weft::train {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;

  // The rate of the update made after `step` updates (step >= 0), computed in float64.
  virtual double ValueAt(int64_t step) const = 0;
  // The same in the graph: a float64 scalar from `step`, an int64 scalar. Within 1e-12 of ValueAt
  // (the cosine is a polynomial there: Weft has no Cos op).
  virtual Output Build(const Scope& scope, const Output& step) const = 0;
  // What the schedule is, with its parameters, for errors and logs.
  virtual std::string DebugString() const = 0;
};

// Rises linearly from `initial_learning_rate` at step 0 towards `target` at step `warmup_steps`,
// then follows `after` with its steps counted from the warmup's end (after->ValueAt(s - warmup)),
// or stays at `target` when `after` is null.
struct LinearWarmupOptions {
  int64_t warmup_steps = 0;  // > 0
  double initial_learning_rate = 0;
  double target = 0;
};
class LinearWarmup final : public LearningRateSchedule {
 public:
  // InvalidArgument naming the argument for a non-positive warmup_steps or a negative or
  // non-finite rate.
  static StatusOr<std::shared_ptr<const LearningRateSchedule>> Create(
      const LinearWarmupOptions& options,
      std::shared_ptr<const LearningRateSchedule> after = nullptr);

  double ValueAt(int64_t step) const override;
  Output Build(const Scope& scope, const Output& step) const override;
  std::string DebugString() const override;

 private:
  LinearWarmup(const LinearWarmupOptions& options,
               std::shared_ptr<const LearningRateSchedule> after)
      : options_(options), after_(std::move(after)) {}

  const LinearWarmupOptions options_;
  const std::shared_ptr<const LearningRateSchedule> after_;
};

// The reference's CosineDecay: from the decay's start the rate is
//   decay_from * ((1 - alpha) * 0.5 * (1 + cos(pi * min(s, decay_steps) / decay_steps)) + alpha)
// so it reaches alpha * decay_from at decay_steps and stays there. Without a warmup decay_from is
// initial_learning_rate and s the step; with one (warmup_steps > 0 and warmup_target set) the rate
// first rises linearly from initial_learning_rate to warmup_target over warmup_steps (a
// LinearWarmup), then decays from warmup_target with s counted from the warmup's end.
struct CosineDecayOptions {
  double initial_learning_rate = 0;
  int64_t decay_steps = 0;  // > 0
  double alpha = 0;         // in [0, 1]
  int64_t warmup_steps = 0;
  std::optional<double> warmup_target{};
};
class CosineDecay final : public LearningRateSchedule {
 public:
  // InvalidArgument naming the argument for a non-positive decay_steps, alpha outside [0, 1], a
  // negative or non-finite rate, a negative warmup_steps, or warmup_steps without warmup_target.
  static StatusOr<std::shared_ptr<const LearningRateSchedule>> Create(
      const CosineDecayOptions& options);

  double ValueAt(int64_t step) const override;
  Output Build(const Scope& scope, const Output& step) const override;
  std::string DebugString() const override;

 private:
  CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha)
      : initial_learning_rate_(initial_learning_rate), decay_steps_(decay_steps), alpha_(alpha) {}

  const double initial_learning_rate_;
  const int64_t decay_steps_;
  const double alpha_;
};

// The usual transformer schedule (W6) by its end points: linear from `initial_learning_rate` to
// `peak` over warmup_steps, cosine from `peak` down to final_learning_rate, reached at step
// total_steps (counted from the start, warmup included), then constant. A CosineDecay with
// warmup_target = peak, decay_steps = total_steps - warmup_steps, alpha = final / peak.
struct WarmupCosineOptions {
  double peak = 0;                 // > 0
  double final_learning_rate = 0;  // in [0, peak]
  int64_t warmup_steps = 0;        // in [0, total_steps)
  int64_t total_steps = 0;
  double initial_learning_rate = 0;
};
// InvalidArgument naming the argument for bad values, e.g. a warmup not shorter than total_steps.
StatusOr<std::shared_ptr<const LearningRateSchedule>> WarmupCosineDecay(
    const WarmupCosineOptions& options);

}  // namespace weft::train
