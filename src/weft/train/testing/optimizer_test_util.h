// Test helpers for the optimizer's options through Model::Fit: a fixed-seed classifier trained with
// AdamW or momentum, a learning-rate schedule and a global clip norm, under any strategy, and what
// it ends with (every step's loss, the predictions, each replica's copy of a weight, the
// optimizer's step counter). Used by gradient_clipping_test, scheduled_fit_test and
// clip_multi_worker_test. Test-only.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/train/callbacks.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train::testing {

struct OptimizerConfig {
  bool adamw = true;      // else momentum SGD (0.05, 0.9)
  double clip_norm = 0;   // 0: no clipping
  bool schedule = false;  // warmup 5 steps to 0.01 (0.05 for momentum), cosine to a tenth at 15
  int steps_per_execution = 1;
  int epochs = 2;  // of 10 batches of 32
};

inline std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config) {
  std::unique_ptr<Optimizer> optimizer;
  const double peak = config.adamw ? 0.01 : 0.05;
  if (config.adamw) {
    auto made = NewAdamWOptimizer(peak, 0.1, 0.9, 0.95, 1e-7, {.decay_if = DecayRankAtLeast(2)});
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return nullptr;
    optimizer = std::move(made).value();
  } else {
    optimizer = NewMomentumOptimizer(peak, 0.9);
  }
  if (config.clip_norm > 0) {
    Status set = optimizer->SetGlobalClipNorm(config.clip_norm);
    EXPECT_TRUE(set.ok()) << set;
  }
  if (config.schedule) {
    auto schedule = WarmupCosineDecay(
        {.peak = peak, .final_learning_rate = peak / 10, .warmup_steps = 5, .total_steps = 15});
    EXPECT_TRUE(schedule.ok()) << schedule.status();
    if (schedule.ok()) {
      Status set = optimizer->SetLearningRateSchedule(*schedule);
      EXPECT_TRUE(set.ok()) << set;
    }
  }
  return optimizer;
}

// Keeps every step's loss.
class LossRecorder final : public Callback {
 public:
  Status OnTrainBatchEnd(Model&, const Logs& logs) override {
    losses.push_back(logs.at("loss"));
    return Status::OK();
  }
  std::vector<double> losses;
};

// Each component of the model's variable `name` (every replica's copy), read in its session; empty
// (with a test failure) when there is no such variable.
inline std::vector<Tensor> ReadComponents(Model& model, const std::string& name) {
  std::vector<std::string> reads;
  for (const auto& variable : model.distributed_variables()) {
    if (variable->name() != name) continue;
    Status added = model.AddToGraph([&](const Scope& root) {
      for (const Variable& component : variable->components()) {
        reads.push_back(component.Read(root.NewSubScope("test_read")).name());
      }
      return root.status();
    });
    EXPECT_TRUE(added.ok()) << added;
  }
  EXPECT_FALSE(reads.empty()) << "no variable '" << name << "'";
  std::vector<Tensor> values;
  if (reads.empty()) return values;
  Status read = model.session()->Run({}, reads, {}, &values);
  EXPECT_TRUE(read.ok()) << read;
  return values;
}

struct FitResult {
  Status status;
  std::vector<double> step_losses;
  std::vector<float> predictions;
  std::vector<Tensor> hidden_kernel;  // each replica's copy
  std::vector<Tensor> iterations;     // each replica's copy of the counter (with a schedule)
  double learning_rate = 0;           // Model::learning_rate() after Fit
};

// Fits the classifier of model_test_util.h ("hidden" 32 relu, "logits" 10) on 320 shuffled
// examples in batches of 32 for config.epochs epochs with MakeOptimizer(config), then predicts.
inline FitResult FitClassifier(const distribute::Strategy* strategy, const OptimizerConfig& config,
                               std::vector<Callback*> callbacks = {}) {
  FitResult result;
  Sequential model(
      Dense(32, "relu", {.name = "hidden", .kernel_initializer = Initializer::GlorotUniform(5)}),
      Dense(10, "", {.name = "logits", .kernel_initializer = Initializer::GlorotUniform(6)}));
  result.status = model.Compile(
      MakeOptimizer(config), SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"},
      {.strategy = strategy, .steps_per_execution = config.steps_per_execution});
  if (!result.status.ok()) return result;
  LossRecorder recorder;
  callbacks.push_back(&recorder);
  auto history = model.Fit(Classes(320, 32, /*shuffle_seed=*/3),
                           {.epochs = config.epochs, .callbacks = std::move(callbacks)});
  result.step_losses = recorder.losses;
  if (!history.ok()) {
    result.status = history.status();
    return result;
  }
  auto predicted = model.Predict(Classes(8, 8));
  result.status = predicted.status();
  if (!predicted.ok()) return result;
  result.predictions.assign(predicted->data<float>(),
                            predicted->data<float>() + predicted->NumElements());
  result.hidden_kernel = ReadComponents(model, "hidden/kernel");
  if (config.schedule) result.iterations = ReadComponents(model, "iterations");
  result.learning_rate = model.learning_rate();
  return result;
}

// Two runs trained alike: every step's loss within 1e-5, the predictions within 1e-4.
inline void ExpectSameTraining(const FitResult& a, const FitResult& b) {
  ASSERT_TRUE(a.status.ok()) << a.status;
  ASSERT_TRUE(b.status.ok()) << b.status;
  ASSERT_EQ(a.step_losses.size(), b.step_losses.size());
  for (size_t i = 0; i < a.step_losses.size(); ++i) {
    EXPECT_NEAR(a.step_losses[i], b.step_losses[i], 1e-5) << "step " << i + 1;
  }
  ASSERT_EQ(a.predictions.size(), b.predictions.size());
  for (size_t i = 0; i < a.predictions.size(); ++i) {
    EXPECT_NEAR(a.predictions[i], b.predictions[i], 1e-4) << "output " << i;
  }
}

// The largest difference between two runs' predictions.
inline double MaxPredictionGap(const FitResult& a, const FitResult& b) {
  double gap = 0;
  for (size_t i = 0; i < a.predictions.size() && i < b.predictions.size(); ++i) {
    gap = std::max(gap, static_cast<double>(std::abs(a.predictions[i] - b.predictions[i])));
  }
  return gap;
}

}  // namespace weft::train::testing
