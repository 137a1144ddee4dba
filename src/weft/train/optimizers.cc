// The optimizers: GradientDescent, Momentum, Adam and Adagrad, each its update kernels (dense and,
// where the reference has them, sparse) over the bookkeeping that Optimizer does (optimizer.cc).
#include "weft/train/optimizer.h"

namespace weft::train {
namespace {

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

class AdamOptimizer final : public Optimizer {
 public:
  AdamOptimizer(double learning_rate, double beta1, double beta2, double epsilon)
      : Optimizer(learning_rate), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}
  std::string name() const override { return "Adam"; }

 protected:
  Output ApplyOne(const Scope& scope, const Variable& variable, const Output& gradient,
                  const Output& learning_rate) override {
    Variable m = CreateSlot(scope, variable, "Adam_m");
    Variable v = CreateSlot(scope, variable, "Adam_v");
    return ops::ResourceApplyAdam(scope, variable.handle(), m.handle(), v.handle(),
                                  beta1_power_.Read(scope), beta2_power_.Read(scope), learning_rate,
                                  beta1_, beta2_, epsilon_, gradient);
  }
  // Lazy Adam: rows absent from a step keep their moments (ResourceSparseApplyAdam).
  Output ApplySparseOne(const Scope& scope, const Variable& variable, const Output& values,
                        const Output& indices, const Output& learning_rate) override {
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
  const double beta1_, beta2_, epsilon_;
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

}  // namespace weft::train
