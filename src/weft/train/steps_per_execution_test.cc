// CompileOptions::steps_per_execution: several steps per run train exactly as one step per run
// (the same losses, every step's callbacks, the same weights), also on 2 mirrored replicas, with
// an epoch whose batches do not fill the last execution and with max_steps inside an execution.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/train/callbacks.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

// Counts the steps the callbacks saw and keeps their losses.
class StepRecorder final : public Callback {
 public:
  Status OnTrainBatchEnd(Model& model, const Logs& logs) override {
    losses.push_back(logs.at("loss"));
    steps.push_back(model.position().global_step);
    return Status::OK();
  }
  std::vector<double> losses;
  std::vector<int64_t> steps;
};

struct Trained {
  std::vector<double> epoch_losses;
  StepRecorder recorder;
  std::vector<float> predictions;
};

// Two epochs of 10 batches (shuffled anew each epoch) of a fixed-seed classifier trained with Adam
// (whose shared powers must advance between the steps of an execution), `k` steps per execution,
// at most `max_steps` steps.
Trained Train(int k, const distribute::Strategy* strategy, int64_t max_steps = -1) {
  Trained trained;
  Sequential model(Dense(16, "relu", {.kernel_initializer = Initializer::GlorotUniform(5)}),
                   Dense(10, "", {.kernel_initializer = Initializer::GlorotUniform(6)}));
  Status compiled =
      model.Compile(NewAdamOptimizer(0.01), SparseCategoricalCrossentropy(/*from_logits=*/true),
                    {"accuracy"}, {.strategy = strategy, .steps_per_execution = k});
  EXPECT_TRUE(compiled.ok()) << compiled;
  auto history = model.Fit(testing::Classes(320, 32, /*shuffle_seed=*/3),
                           {.epochs = 2, .max_steps = max_steps, .callbacks = {&trained.recorder}});
  EXPECT_TRUE(history.ok()) << history.status();
  if (!history.ok()) return trained;
  for (const Logs& logs : history->epochs) trained.epoch_losses.push_back(logs.at("loss"));
  auto predicted = model.Predict(testing::Classes(8, 8));
  EXPECT_TRUE(predicted.ok()) << predicted.status();
  if (predicted.ok()) {
    trained.predictions.assign(predicted->data<float>(),
                               predicted->data<float>() + predicted->NumElements());
  }
  return trained;
}

void ExpectSameTraining(const Trained& a, const Trained& b) {
  ASSERT_EQ(a.recorder.steps, b.recorder.steps);
  ASSERT_EQ(a.recorder.losses.size(), b.recorder.losses.size());
  for (size_t i = 0; i < a.recorder.losses.size(); ++i) {
    EXPECT_NEAR(a.recorder.losses[i], b.recorder.losses[i], 1e-5) << "step " << i + 1;
  }
  ASSERT_EQ(a.epoch_losses.size(), b.epoch_losses.size());
  for (size_t e = 0; e < a.epoch_losses.size(); ++e) {
    EXPECT_NEAR(a.epoch_losses[e], b.epoch_losses[e], 1e-5) << "epoch " << e + 1;
  }
  ASSERT_EQ(a.predictions.size(), b.predictions.size());
  for (size_t i = 0; i < a.predictions.size(); ++i) {
    EXPECT_NEAR(a.predictions[i], b.predictions[i], 1e-4) << i;
  }
}

TEST(StepsPerExecutionTest, ThreeStepsPerRunTrainAsOneAtATime) {
  Trained one = Train(1, nullptr);
  // 10 batches an epoch: three executions of 3, then the last batch on its own.
  Trained three = Train(3, nullptr);
  ASSERT_EQ(one.recorder.steps.size(), 20u);
  EXPECT_EQ(three.recorder.steps.back(), 20);
  ExpectSameTraining(one, three);
  EXPECT_LT(one.epoch_losses[1], one.epoch_losses[0]);
}

TEST(StepsPerExecutionTest, TwoMirroredReplicasAndMaxStepsInsideAnExecution) {
  std::unique_ptr<distribute::Strategy> mirrored = testing::Mirrored(2);
  ExpectSameTraining(Train(1, mirrored.get()), Train(4, mirrored.get()));
  // max_steps 7: executions of 4, then 3 steps one by one.
  Trained capped = Train(4, nullptr, /*max_steps=*/7);
  EXPECT_EQ(capped.recorder.steps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  ExpectSameTraining(Train(1, nullptr, 7), capped);
}

TEST(StepsPerExecutionTest, ZeroIsRefused) {
  Sequential model(Dense(2));
  Status status = model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError(), {},
                                {.steps_per_execution = 0});
  EXPECT_THAT(status.message(), HasSubstr("steps_per_execution must be at least 1, got 0"));
}

}  // namespace
}  // namespace weft::train
