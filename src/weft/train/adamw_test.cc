// AdamW against its closed form (with and without excluding variables from the decay), its
// arguments, and the optimizer options every optimizer shares (schedule, clip norm) refusing bad
// values and late calls.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/runtime/session.h"
#include "weft/train/optimizer.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

constexpr double kLr = 0.1, kDecay = 0.1, kBeta1 = 0.9, kBeta2 = 0.95, kEpsilon = 1e-7;
const std::vector<double> kKernelTarget = {1.0, -2.0, 0.5, 3.0};
const std::vector<double> kBiasTarget = {-1.0, 0.25};

struct Weights {
  std::vector<float> kernel, bias;
};

// loss = sum((kernel - kKernelTarget)^2) + sum((bias - kBiasTarget)^2) for a float32 kernel [2, 2]
// starting at 1.5 and bias [2] starting at -0.5 (named "dense/kernel" and "dense/bias"), minimized
// by `optimizer` for `steps` steps without a strategy; the weights after each step.
std::vector<Weights> RunSteps(Optimizer& optimizer, int steps) {
  Scope root = Scope::NewRootScope();
  Scope dense = root.NewSubScope("dense");
  Variable kernel = Variable::Create(dense, "kernel", TensorShape({2, 2}), DataType::kFloat,
                                     Initializer::Constant(1.5));
  Variable bias = Variable::Create(dense, "bias", TensorShape({2}), DataType::kFloat,
                                   Initializer::Constant(-0.5));
  std::vector<float> kernel_target(kKernelTarget.begin(), kKernelTarget.end());
  std::vector<float> bias_target(kBiasTarget.begin(), kBiasTarget.end());
  Output kernel_error =
      ops::Sub(root, kernel.Read(root),
               ops::Const(root, Tensor::FromVector(kernel_target, TensorShape({2, 2}))));
  Output bias_error =
      ops::Sub(root, bias.Read(root), ops::Const(root, Tensor::FromVector(bias_target)));
  Output loss = ops::Add(root, ops::Sum(root, ops::Square(root, kernel_error), {0, 1}),
                         ops::Sum(root, ops::Square(root, bias_error), 0));
  auto train_op = optimizer.Minimize(root, loss, {kernel, bias});
  EXPECT_TRUE(train_op.ok()) << train_op.status();
  if (!train_op.ok()) return {};
  std::vector<std::string> inits = {kernel.initializer().name(), bias.initializer().name()};
  for (const Output& init : optimizer.initializers()) inits.push_back(init.name());
  Output kernel_read = kernel.Read(root.WithControlDependencies({*train_op}));
  Output bias_read = bias.Read(root.WithControlDependencies({*train_op}));
  auto session = NewSession(SessionOptions()).value();
  EXPECT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  EXPECT_TRUE(session->Run({}, {}, inits, &outputs).ok());
  std::vector<Weights> history;
  for (int i = 0; i < steps; ++i) {
    Status s = session->Run({}, {kernel_read.name(), bias_read.name()}, {}, &outputs);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return history;
    auto k = outputs[0].flat<float>();
    auto b = outputs[1].flat<float>();
    history.push_back({{k.begin(), k.end()}, {b.begin(), b.end()}});
  }
  return history;
}

// The closed form, in float64: w's values after each of `steps` AdamW steps on sum((w - t)^2)
// from `start`, decaying when `decays`.
std::vector<std::vector<double>> ClosedForm(double start, const std::vector<double>& target,
                                            bool decays, int steps) {
  std::vector<double> w(target.size(), start), m(target.size(), 0), v(target.size(), 0);
  std::vector<std::vector<double>> history;
  for (int t = 1; t <= steps; ++t) {
    const double lr_t = kLr * std::sqrt(1 - std::pow(kBeta2, t)) / (1 - std::pow(kBeta1, t));
    for (size_t i = 0; i < w.size(); ++i) {
      const double g = 2 * (w[i] - target[i]);
      m[i] = kBeta1 * m[i] + (1 - kBeta1) * g;
      v[i] = kBeta2 * v[i] + (1 - kBeta2) * g * g;
      w[i] -= (decays ? kLr * kDecay * w[i] : 0) + lr_t * m[i] / (std::sqrt(v[i]) + kEpsilon);
    }
    history.push_back(w);
  }
  return history;
}

void ExpectClosedForm(AdamWOptions options, bool bias_decays) {
  auto optimizer = NewAdamWOptimizer(kLr, kDecay, kBeta1, kBeta2, kEpsilon, std::move(options));
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  EXPECT_EQ((*optimizer)->name(), "AdamW");
  std::vector<Weights> history = RunSteps(**optimizer, 2);
  ASSERT_EQ(history.size(), 2u);
  auto kernel = ClosedForm(1.5, kKernelTarget, /*decays=*/true, 2);
  auto bias = ClosedForm(-0.5, kBiasTarget, bias_decays, 2);
  for (int step = 0; step < 2; ++step) {
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_NEAR(history[step].kernel[i], kernel[step][i], 1e-6) << "step " << step << " " << i;
    }
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_NEAR(history[step].bias[i], bias[step][i], 1e-6) << "step " << step << " " << i;
    }
  }
  // The decay is visible: the bias with it and without it differ by more than the tolerance.
  auto other = ClosedForm(-0.5, kBiasTarget, !bias_decays, 2);
  EXPECT_GT(std::abs(other[1][0] - bias[1][0]), 1e-3);
}

TEST(AdamWTest, OneAndTwoStepsFollowTheClosedFormDecayingEveryVariable) {
  ExpectClosedForm({}, /*bias_decays=*/true);
}

TEST(AdamWTest, RankOneVariablesExcludedByTheRankFilterFollowPlainAdam) {
  ExpectClosedForm({.decay_if = DecayRankAtLeast(2)}, /*bias_decays=*/false);
}

TEST(AdamWTest, VariablesExcludedByNameFollowPlainAdam) {
  ExpectClosedForm({.exclude_from_weight_decay = {"bias"}}, /*bias_decays=*/false);
  // A filter sees the variable's name and shape; a name not listed still decays.
  ExpectClosedForm({.exclude_from_weight_decay = {"gamma"},
                    .decay_if =
                        [](std::string_view name, const TensorShape& shape) {
                          return name == "dense/bias" || shape.dims() == 2;
                        }},
                   /*bias_decays=*/true);
}

TEST(AdamWTest, ZeroWeightDecayIsAdamBitwise) {
  auto adamw = NewAdamWOptimizer(kLr, 0.0, kBeta1, kBeta2, kEpsilon);
  ASSERT_TRUE(adamw.ok());
  auto adam = NewAdamOptimizer(kLr, kBeta1, kBeta2, kEpsilon);
  std::vector<Weights> a = RunSteps(**adamw, 3), b = RunSteps(*adam, 3);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(a[step].kernel, b[step].kernel);
    EXPECT_EQ(a[step].bias, b[step].bias);
  }
}

TEST(AdamWTest, BadArgumentsAreRefusedNamingThem) {
  auto message = [](const StatusOr<std::unique_ptr<Optimizer>>& made) {
    EXPECT_TRUE(IsInvalidArgument(made.status())) << made.status();
    return std::string(made.status().message());
  };
  EXPECT_THAT(message(NewAdamWOptimizer(1e-3, -0.1)), HasSubstr("weight_decay"));
  EXPECT_THAT(message(NewAdamWOptimizer(1e-3, NAN)), HasSubstr("weight_decay"));
  EXPECT_THAT(message(NewAdamWOptimizer(-1e-3, 0.1)), HasSubstr("learning_rate"));
  EXPECT_THAT(message(NewAdamWOptimizer(1e-3, 0.1, 1.0)), HasSubstr("beta1 must be in [0, 1)"));
  EXPECT_THAT(message(NewAdamWOptimizer(1e-3, 0.1, 0.9, -0.5)), HasSubstr("beta2"));
  EXPECT_THAT(message(NewAdamWOptimizer(1e-3, 0.1, 0.9, 0.95, 0)), HasSubstr("epsilon"));
  EXPECT_THAT(message(NewAdamWOptimizer(1e-3, 0.1, 0.9, 0.95, 1e-7,
                                        {.exclude_from_weight_decay = {"bias", ""}})),
              HasSubstr("exclude_from_weight_decay[1] is empty"));
}

TEST(OptimizerOptionsTest, BadValuesAndLateCallsAreRefusedNamingThem) {
  auto optimizer = NewAdamWOptimizer(kLr, kDecay).value();
  for (double bad : {0.0, -1.0, double{NAN}, double{INFINITY}}) {
    Status status = optimizer->SetGlobalClipNorm(bad);
    EXPECT_TRUE(IsInvalidArgument(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr("clip_norm must be finite and positive"));
  }
  Status null_schedule = optimizer->SetLearningRateSchedule(nullptr);
  EXPECT_TRUE(IsInvalidArgument(null_schedule)) << null_schedule;
  EXPECT_THAT(null_schedule.message(), HasSubstr("schedule is null"));
  EXPECT_FALSE(optimizer->global_clip_norm().has_value());

  auto schedule = LinearWarmup::Create({.warmup_steps = 2, .target = 0.5}).value();
  ASSERT_TRUE(optimizer->SetLearningRateSchedule(schedule).ok());
  ASSERT_TRUE(optimizer->SetGlobalClipNorm(1.0).ok());
  EXPECT_EQ(optimizer->learning_rate(), 0.0);  // the schedule's rate at step 0
  ASSERT_EQ(RunSteps(*optimizer, 1).size(), 1u);
  // After ApplyGradients built a step with them, neither may change.
  Status late = optimizer->SetGlobalClipNorm(2.0);
  EXPECT_TRUE(IsFailedPrecondition(late)) << late;
  EXPECT_THAT(late.message(), HasSubstr("global clip norm must be set before ApplyGradients"));
  EXPECT_TRUE(IsFailedPrecondition(optimizer->SetLearningRateSchedule(schedule)));
  // A schedule owns the rate: assigning it is refused, naming the schedule.
  Scope root = Scope::NewRootScope();
  StatusOr<Output> assign = optimizer->AssignLearningRate(root, 0.1f);
  EXPECT_TRUE(IsFailedPrecondition(assign.status())) << assign.status();
  EXPECT_THAT(assign.status().message(), HasSubstr("LinearWarmup(warmup_steps=2"));
}

// A schedule without a strategy: the counter "iterations" advances once per step, and each step
// uses the rate of the steps before it (plain gradient descent shows the rate directly).
TEST(OptimizerOptionsTest, AScheduleWithoutAStrategyGivesEachStepItsRate) {
  auto optimizer = NewGradientDescentOptimizer(123.0);
  auto schedule = LinearWarmup::Create({.warmup_steps = 4, .target = 0.2}).value();
  ASSERT_TRUE(optimizer->SetLearningRateSchedule(schedule).ok());
  std::vector<Weights> history = RunSteps(*optimizer, 3);
  ASSERT_EQ(history.size(), 3u);
  double bias = -0.5;
  for (int step = 0; step < 3; ++step) {
    bias -= schedule->ValueAt(step) * 2 * (bias - kBiasTarget[0]);
    EXPECT_NEAR(history[step].bias[0], bias, 1e-6) << "step " << step;
  }
  bool has_iterations = false;
  for (const Variable& variable : optimizer->variables()) {
    has_iterations |= variable.name() == "iterations" && variable.dtype() == DataType::kInt64;
    EXPECT_NE(variable.name(), "learning_rate");
  }
  EXPECT_TRUE(has_iterations);
}

}  // namespace
}  // namespace weft::train
