#include "weft/train/learning_rate_schedule.h"

#include <cmath>
#include <numbers>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/runtime/session.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

// W6's schedule: warmup 100 steps from 0 to 1e-3, cosine to 1e-4 at step 2,000, then 1e-4.
std::shared_ptr<const LearningRateSchedule> W6Schedule() {
  auto schedule = WarmupCosineDecay(
      {.peak = 1e-3, .final_learning_rate = 1e-4, .warmup_steps = 100, .total_steps = 2000});
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  return schedule.ok() ? *schedule : nullptr;
}

// The closed form of W6's schedule.
double W6Rate(int64_t step) {
  if (step < 100) return 1e-3 * static_cast<double>(step) / 100;
  const double fraction = static_cast<double>(std::min<int64_t>(step, 2000) - 100) / 1900;
  return 1e-4 + (1e-3 - 1e-4) * 0.5 * (1 + std::cos(std::numbers::pi * fraction));
}

// The schedule built into a graph, evaluated at each of `steps` (fed to an int64 placeholder).
std::vector<double> InGraph(const LearningRateSchedule& schedule,
                            const std::vector<int64_t>& steps) {
  Scope root = Scope::NewRootScope();
  Output step = ops::Placeholder(root.WithOpName("step"), DataType::kInt64, PartialShape({}));
  Output rate = schedule.Build(root, step);
  EXPECT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(rate.dtype(), DataType::kDouble);
  auto session = NewSession(SessionOptions()).value();
  EXPECT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<double> values;
  for (int64_t s : steps) {
    std::vector<Tensor> outputs;
    Status status =
        session->Run({{"step", Tensor::Scalar<int64_t>(s)}}, {rate.name()}, {}, &outputs);
    EXPECT_TRUE(status.ok()) << status;
    values.push_back(status.ok() ? *outputs[0].data<double>() : NAN);
  }
  return values;
}

TEST(LearningRateScheduleTest, W6WarmupThenCosineMatchesTheClosedFormInCppAndInTheGraph) {
  auto schedule = W6Schedule();
  ASSERT_NE(schedule, nullptr);
  const std::vector<int64_t> steps = {0, 50, 100, 1050, 2000, 3000};
  const std::vector<double> expected = {0, 5e-4, 1e-3, 5.5e-4, 1e-4, 1e-4};
  std::vector<double> graph = InGraph(*schedule, steps);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_NEAR(schedule->ValueAt(steps[i]), expected[i], 1e-15) << "step " << steps[i];
    EXPECT_NEAR(W6Rate(steps[i]), expected[i], 1e-15) << "step " << steps[i];
    EXPECT_NEAR(graph[i], expected[i], 1e-15) << "step " << steps[i];
  }
  // Between the named steps too, the graph's polynomial cosine agrees with std::cos.
  std::vector<int64_t> every;
  for (int64_t s = 0; s <= 2100; s += 7) every.push_back(s);
  std::vector<double> dense = InGraph(*schedule, every);
  for (size_t i = 0; i < every.size(); ++i) {
    EXPECT_NEAR(dense[i], W6Rate(every[i]), 1e-15) << "step " << every[i];
    EXPECT_NEAR(schedule->ValueAt(every[i]), W6Rate(every[i]), 1e-15) << "step " << every[i];
  }
}

TEST(LearningRateScheduleTest, CosineDecayWithoutWarmupAndLinearWarmupComposed) {
  auto cosine = CosineDecay::Create({.initial_learning_rate = 0.1, .decay_steps = 10, .alpha = 0});
  ASSERT_TRUE(cosine.ok()) << cosine.status();
  EXPECT_DOUBLE_EQ((*cosine)->ValueAt(0), 0.1);
  EXPECT_NEAR((*cosine)->ValueAt(5), 0.05, 1e-15);
  EXPECT_NEAR((*cosine)->ValueAt(10), 0, 1e-15);
  EXPECT_NEAR((*cosine)->ValueAt(20), 0, 1e-15);
  // A warmup from 0.02 to 0.1 over 4 steps, then the cosine counted from the warmup's end.
  auto warm = LinearWarmup::Create(
      {.warmup_steps = 4, .initial_learning_rate = 0.02, .target = 0.1}, *cosine);
  ASSERT_TRUE(warm.ok()) << warm.status();
  const std::vector<int64_t> steps = {0, 2, 4, 9, 14, 100};
  const std::vector<double> expected = {0.02, 0.06, 0.1, 0.05, 0, 0};
  std::vector<double> graph = InGraph(**warm, steps);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_NEAR((*warm)->ValueAt(steps[i]), expected[i], 1e-15) << "step " << steps[i];
    EXPECT_NEAR(graph[i], expected[i], 1e-15) << "step " << steps[i];
  }
  // Alone, a warmup stays at its target.
  auto plateau = LinearWarmup::Create({.warmup_steps = 2, .target = 0.5});
  ASSERT_TRUE(plateau.ok());
  EXPECT_EQ(InGraph(**plateau, {0, 1, 2, 50}), (std::vector<double>{0, 0.25, 0.5, 0.5}));
  EXPECT_THAT((*warm)->DebugString(), HasSubstr("then CosineDecay(initial_learning_rate=0.1"));
}

TEST(LearningRateScheduleTest, BadArgumentsAreRefusedNamingThem) {
  auto message = [](const StatusOr<std::shared_ptr<const LearningRateSchedule>>& made) {
    EXPECT_TRUE(IsInvalidArgument(made.status())) << made.status();
    return std::string(made.status().message());
  };
  EXPECT_THAT(message(WarmupCosineDecay({.peak = 1e-3, .warmup_steps = 100, .total_steps = 100})),
              HasSubstr("warmup_steps (100) must be less than total_steps (100)"));
  EXPECT_THAT(message(WarmupCosineDecay({.peak = 1e-3, .warmup_steps = 300, .total_steps = 200})),
              HasSubstr("warmup_steps (300)"));
  EXPECT_THAT(message(WarmupCosineDecay({.peak = 0, .total_steps = 10})), HasSubstr("peak"));
  EXPECT_THAT(
      message(WarmupCosineDecay({.peak = 1e-3, .final_learning_rate = 1e-2, .total_steps = 10})),
      HasSubstr("final_learning_rate"));
  EXPECT_THAT(message(WarmupCosineDecay({.peak = 1e-3, .warmup_steps = -1, .total_steps = 10})),
              HasSubstr("warmup_steps must not be negative"));
  EXPECT_THAT(message(CosineDecay::Create({.initial_learning_rate = 0.1})),
              HasSubstr("decay_steps must be positive"));
  EXPECT_THAT(message(CosineDecay::Create({.initial_learning_rate = -1, .decay_steps = 5})),
              HasSubstr("initial_learning_rate"));
  EXPECT_THAT(
      message(CosineDecay::Create({.initial_learning_rate = 1, .decay_steps = 5, .alpha = 1.5})),
      HasSubstr("alpha must be in [0, 1]"));
  EXPECT_THAT(message(CosineDecay::Create(
                  {.initial_learning_rate = 1, .decay_steps = 5, .warmup_steps = 3})),
              HasSubstr("needs a warmup_target"));
  EXPECT_THAT(
      message(CosineDecay::Create(
          {.initial_learning_rate = 1, .decay_steps = 5, .warmup_steps = 3, .warmup_target = NAN})),
      HasSubstr("warmup_target"));
  EXPECT_THAT(message(LinearWarmup::Create({.warmup_steps = 0, .target = 1})),
              HasSubstr("warmup_steps must be positive"));
  EXPECT_THAT(message(LinearWarmup::Create({.warmup_steps = 3, .target = INFINITY})),
              HasSubstr("target"));
}

}  // namespace
}  // namespace weft::train
