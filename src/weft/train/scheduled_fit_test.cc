// A learning-rate schedule through Compile and Fit (with AdamW and a global clip norm, as W6
// trains): several steps per execution train as one at a time (each unrolled step reads its own
// step count), also on 2 mirrored replicas; a killed run resumed from its checkpoint continues the
// schedule; and a callback that tries to set the rate of a scheduled optimizer fails Fit, naming
// the schedule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/io/testing/io_test_util.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/train/testing/model_test_util.h"
#include "weft/train/testing/optimizer_test_util.h"

namespace weft::train {
namespace {

using testing::FailAtStep;
using testing::FitClassifier;
using testing::FitResult;
using ::testing::HasSubstr;
using testing::OptimizerConfig;

constexpr OptimizerConfig kW6Like = {.adamw = true, .clip_norm = 0.05, .schedule = true};

// The schedule MakeOptimizer gives AdamW.
double ScheduledRate(int64_t step) {
  return WarmupCosineDecay(
             {.peak = 0.01, .final_learning_rate = 0.001, .warmup_steps = 5, .total_steps = 15})
      .value()
      ->ValueAt(step);
}

// The counter advanced once per step on every replica.
void ExpectIterations(const FitResult& run, size_t copies, int64_t steps) {
  ASSERT_EQ(run.iterations.size(), copies);
  for (const Tensor& count : run.iterations) {
    EXPECT_TENSOR_EQ(count, Tensor::Scalar<int64_t>(steps));
  }
}

TEST(ScheduledFitTest, FourStepsPerExecutionTrainAsOneAtATime) {
  OptimizerConfig four = kW6Like;
  four.steps_per_execution = 4;
  const FitResult one_at_a_time = FitClassifier(nullptr, kW6Like);
  // 10 batches an epoch: two executions of 4, then 2 steps one by one.
  const FitResult unrolled = FitClassifier(nullptr, four);
  testing::ExpectSameTraining(one_at_a_time, unrolled);
  ExpectIterations(one_at_a_time, 1, 20);
  ExpectIterations(unrolled, 1, 20);
  EXPECT_DOUBLE_EQ(unrolled.learning_rate, ScheduledRate(20));
  EXPECT_DOUBLE_EQ(unrolled.learning_rate, 0.001);
  // The schedule is what trained: a constant rate ends elsewhere.
  OptimizerConfig constant = kW6Like;
  constant.schedule = false;
  EXPECT_GT(testing::MaxPredictionGap(one_at_a_time, FitClassifier(nullptr, constant)), 1e-3);
}

TEST(ScheduledFitTest, TwoMirroredReplicasUnrolledTrainAsOneDevice) {
  std::unique_ptr<distribute::Strategy> mirrored = testing::Mirrored(2);
  OptimizerConfig four = kW6Like;
  four.steps_per_execution = 4;
  const FitResult two = FitClassifier(mirrored.get(), four);
  testing::ExpectSameTraining(FitClassifier(nullptr, kW6Like), two);
  ExpectIterations(two, 2, 20);
  ASSERT_EQ(two.hidden_kernel.size(), 2u);
  EXPECT_TENSOR_EQ(two.hidden_kernel[1], two.hidden_kernel[0]);
}

TEST(ScheduledFitTest, AResumedRunContinuesTheSchedule) {
  const FitResult uninterrupted = FitClassifier(nullptr, kW6Like);
  ASSERT_TRUE(uninterrupted.status.ok()) << uninterrupted.status;

  io::testing::TempDir directory;
  // Saves after steps 3 and 6 (mid-warmup), killed at step 7.
  ModelCheckpoint saving(directory.path(), {.save_every_steps = 3});
  FailAtStep kill(7);
  const FitResult killed = FitClassifier(nullptr, kW6Like, {&saving, &kill});
  EXPECT_TRUE(IsAborted(killed.status)) << killed.status;

  // The same program again resumes after step 6: the counter comes back with the weights and the
  // moments, so the schedule goes on from step 6 and the run ends as the uninterrupted one.
  ModelCheckpoint resuming(directory.path(), {.save_every_steps = 3});
  const FitResult resumed = FitClassifier(nullptr, kW6Like, {&resuming});
  ASSERT_TRUE(resumed.status.ok()) << resumed.status;
  EXPECT_EQ(resuming.resumed_from_step(), 6);
  EXPECT_EQ(resumed.step_losses.size(), 14u);
  ExpectIterations(resumed, 1, 20);
  ASSERT_EQ(resumed.predictions.size(), uninterrupted.predictions.size());
  for (size_t i = 0; i < resumed.predictions.size(); ++i) {
    EXPECT_NEAR(resumed.predictions[i], uninterrupted.predictions[i], 1e-4) << "output " << i;
  }
}

TEST(ScheduledFitTest, SettingTheRateOfAScheduledOptimizerFailsNamingTheSchedule) {
  LearningRateScheduler halve([](int, double rate) { return rate / 2; });
  const FitResult run = FitClassifier(nullptr, kW6Like, {&halve});
  EXPECT_TRUE(IsFailedPrecondition(run.status)) << run.status;
  EXPECT_THAT(run.status.message(), HasSubstr("trains with a learning-rate schedule"));
  EXPECT_THAT(run.status.message(), HasSubstr("CosineDecay(initial_learning_rate=0.01"));
  // A schedule that leaves the rate as it is asks for nothing.
  LearningRateScheduler keep([](int, double rate) { return rate; });
  EXPECT_TRUE(FitClassifier(nullptr, kW6Like, {&keep}).status.ok());
}

}  // namespace
}  // namespace weft::train
