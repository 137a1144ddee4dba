// The optimizers: GradientDescent, Momentum, Adam (and AdamW) and Adagrad, each its update kernels
// (dense and, where the reference has them, sparse) over the bookkeeping that Optimizer does
// (optimizer.cc).
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "weft/train/optimizer.h"

namespace weft::train {
namespace {

// AdamW's decoupled weight decay and which variables it applies to.
struct WeightDecay {
  double rate = 0;
  AdamWOptions options;
};

class GradientDescentOptimizer final : public Optimizer {
 public:
  explicit GradientDescentOptimizer(double learning_rate) : Optimizer(learning_rate) {}
  std::string name() const override { return "GradientDescent"; }

 protected:
  Output ApplyOne(const Scope& scope, const Variable& variable, const Output& gradient,
                  const Output& learning_rate) override {
    return ops::ResourceApplyGradientDescent(scope, variable.handle(), learning_rate, gradient);
  }
  Output ApplySparseOne(const Scope& scope, const Variable& variable, const Output& values,
                        const Output& indices, const Output& learning_rate) override {
    return ops::ResourceSparseApplyGradientDescent(scope, variable.handle(), learning_rate, values,
                                                   indices);
  }
};

class MomentumOptimizer final : public Optimizer {
 public:
  MomentumOptimizer(double learning_rate, double momentum, bool use_nesterov)
      : Optimizer(learning_rate), momentum_(momentum), use_nesterov_(use_nesterov) {}
  std::string name() const override { return "Momentum"; }

 protected:
  Output ApplyOne(const Scope& scope, const Variable& variable, const Output& gradient,
                  const Output& learning_rate) override {
    Variable accumulator = CreateSlot(scope, variable, "Momentum");
    return ops::ResourceApplyMomentum(scope, variable.handle(), accumulator.handle(), learning_rate,
                                      gradient, momentum_, {.use_nesterov = use_nesterov_});
  }

 private:
  const double momentum_;
  const bool use_nesterov_;
};

// Adam, and with a WeightDecay AdamW (whose slots are Adam's: a checkpoint of one restores into
// the other).
class AdamOptimizer final : public Optimizer {
 public:
  AdamOptimizer(double learning_rate, double beta1, double beta2, double epsilon,
                std::optional<WeightDecay> decay = std::nullopt)
      : Optimizer(learning_rate),
        beta1_(beta1),
        beta2_(beta2),
        epsilon_(epsilon),
        decay_(std::move(decay)) {}
  std::string name() const override { return decay_.has_value() ? "AdamW" : "Adam"; }

 protected:
  Output ApplyOne(const Scope& scope, const Variable& variable, const Output& gradient,
                  const Output& learning_rate) override {
    Variable m = CreateSlot(scope, variable, "Adam_m");
    Variable v = CreateSlot(scope, variable, "Adam_v");
    if (Decays(variable)) {
      return ops::ResourceApplyAdamW(scope, variable.handle(), m.handle(), v.handle(),
                                     beta1_power_.Read(scope), beta2_power_.Read(scope),
                                     learning_rate, beta1_, beta2_, epsilon_, decay_->rate,
                                     gradient);
    }
    return ops::ResourceApplyAdam(scope, variable.handle(), m.handle(), v.handle(),
                                  beta1_power_.Read(scope), beta2_power_.Read(scope), learning_rate,
                                  beta1_, beta2_, epsilon_, gradient);
  }
  // Lazy Adam: rows absent from a step keep their moments (ResourceSparseApplyAdam). AdamW applies
  // the dense gradient a sparse one stands for, as the reference does: its decay moves every row.
  Output ApplySparseOne(const Scope& scope, const Variable& variable, const Output& values,
                        const Output& indices, const Output& learning_rate) override {
    if (decay_.has_value()) {
      return Optimizer::ApplySparseOne(scope, variable, values, indices, learning_rate);
    }
    Variable m = CreateSlot(scope, variable, "Adam_m");
    Variable v = CreateSlot(scope, variable, "Adam_v");
    return ops::ResourceSparseApplyAdam(scope, variable.handle(), m.handle(), v.handle(),
                                        beta1_power_.Read(scope), beta2_power_.Read(scope),
                                        learning_rate, beta1_, beta2_, epsilon_, values, indices);
  }

  void CreateSharedSlots(const Scope& scope, DataType dtype) override {
    beta1_power_ = CreateScalar(scope, "beta1_power", dtype, beta1_);
    beta2_power_ = CreateScalar(scope, "beta2_power", dtype, beta2_);
  }

  // The powers advance once every update of the step has read them.
  std::vector<Output> Finish(const Scope& scope, const std::vector<Output>& updates) override {
    if (!beta1_power_) return {};
    Scope after = scope.WithControlDependencies(updates);
    return {beta1_power_.Assign(after, ops::Mul(after, beta1_power_.Read(after), beta1_)),
            beta2_power_.Assign(after, ops::Mul(after, beta2_power_.Read(after), beta2_))};
  }

 private:
  bool Decays(const Variable& variable) const {
    if (!decay_.has_value() || decay_->rate == 0) return false;
    const std::string name = VariableName(variable);
    for (const std::string& excluded : decay_->options.exclude_from_weight_decay) {
      if (name.find(excluded) != std::string::npos) return false;
    }
    return !decay_->options.decay_if || decay_->options.decay_if(name, variable.shape());
  }

  const double beta1_, beta2_, epsilon_;
  const std::optional<WeightDecay> decay_;
  Variable beta1_power_, beta2_power_;
};

class AdagradOptimizer final : public Optimizer {
 public:
  AdagradOptimizer(double learning_rate, double initial_accumulator_value, double epsilon)
      : Optimizer(learning_rate),
        initial_accumulator_value_(initial_accumulator_value),
        epsilon_(epsilon) {}
  std::string name() const override { return "Adagrad"; }

 protected:
  Output ApplyOne(const Scope& scope, const Variable& variable, const Output& gradient,
                  const Output& learning_rate) override {
    Variable accumulator = Accumulator(scope, variable);
    return ops::ResourceApplyAdagradV2(scope, variable.handle(), accumulator.handle(),
                                       learning_rate, epsilon_, gradient);
  }
  Output ApplySparseOne(const Scope& scope, const Variable& variable, const Output& values,
                        const Output& indices, const Output& learning_rate) override {
    Variable accumulator = Accumulator(scope, variable);
    return ops::ResourceSparseApplyAdagradV2(scope, variable.handle(), accumulator.handle(),
                                             learning_rate, epsilon_, values, indices);
  }

 private:
  Variable Accumulator(const Scope& scope, const Variable& variable) {
    return CreateSlot(scope, variable, "Adagrad",
                      Initializer::Constant(initial_accumulator_value_));
  }

  const double initial_accumulator_value_, epsilon_;
};

}  // namespace

std::unique_ptr<Optimizer> NewGradientDescentOptimizer(double learning_rate) {
  return std::make_unique<GradientDescentOptimizer>(learning_rate);
}

std::unique_ptr<Optimizer> NewMomentumOptimizer(double learning_rate, double momentum,
                                                bool use_nesterov) {
  return std::make_unique<MomentumOptimizer>(learning_rate, momentum, use_nesterov);
}

std::unique_ptr<Optimizer> NewAdamOptimizer(double learning_rate, double beta1, double beta2,
                                            double epsilon) {
  return std::make_unique<AdamOptimizer>(learning_rate, beta1, beta2, epsilon);
}

std::unique_ptr<Optimizer> NewAdagradOptimizer(double learning_rate,
                                               double initial_accumulator_value, double epsilon) {
  return std::make_unique<AdagradOptimizer>(learning_rate, initial_accumulator_value, epsilon);
}

WeightDecayFilter DecayRankAtLeast(int rank) {
  return [rank](std::string_view, const TensorShape& shape) { return shape.dims() >= rank; };
}

StatusOr<std::unique_ptr<Optimizer>> NewAdamWOptimizer(double learning_rate, double weight_decay,
                                                       double beta1, double beta2, double epsilon,
                                                       AdamWOptions options) {
  for (const auto& [what, value] :
       {std::pair{"learning_rate", learning_rate}, std::pair{"weight_decay", weight_decay}}) {
    if (!(std::isfinite(value) && value >= 0)) {
      return InvalidArgument("AdamW: ", what, " must be finite and non-negative, got ", value);
    }
  }
  for (const auto& [what, value] : {std::pair{"beta1", beta1}, std::pair{"beta2", beta2}}) {
    if (!(value >= 0 && value < 1)) {
      return InvalidArgument("AdamW: ", what, " must be in [0, 1), got ", value);
    }
  }
  if (!(std::isfinite(epsilon) && epsilon > 0)) {
    return InvalidArgument("AdamW: epsilon must be finite and positive, got ", epsilon);
  }
  for (size_t i = 0; i < options.exclude_from_weight_decay.size(); ++i) {
    if (options.exclude_from_weight_decay[i].empty()) {
      return InvalidArgument("AdamW: exclude_from_weight_decay[", i,
                             "] is empty (it would exclude every variable)");
    }
  }
  return std::unique_ptr<Optimizer>(std::make_unique<AdamOptimizer>(
      learning_rate, beta1, beta2, epsilon, WeightDecay{weight_decay, std::move(options)}));
}

}  // namespace weft::train
