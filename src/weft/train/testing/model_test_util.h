// Test helpers for Model: small datasets with known answers, a mirrored strategy, and a
// fixed-seed classifier trained the same way under any strategy (model_test and
// model_multi_worker_test). Test-only.
#pragma once

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/distribute/strategy.h"
#include "weft/train/callbacks.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"

namespace weft::train::testing {

// Fails Fit once the global step reaches `step`, as a process killed there would stop.
class FailAtStep final : public Callback {
 public:
  explicit FailAtStep(int64_t step) : step_(step) {}
  Status OnTrainBatchEnd(Model&, const Logs& logs) override {
    return logs.at("step") >= static_cast<double>(step_) ? Aborted("killed at step ", step_)
                                                         : Status::OK();
  }

 private:
  int64_t step_;
};

// A worker process's predictions as one line "predictions v1 v2 ..." (every digit of a float), and
// those values read back from its output (multi-worker tests compare workers bitwise).
inline void PrintPredictions(const std::vector<float>& predictions) {
  std::printf("predictions");
  for (float value : predictions) std::printf(" %.9g", value);
  std::printf("\n");
}
inline std::vector<float> PredictionsIn(const std::string& output) {
  std::vector<float> values;
  const size_t at = output.find("predictions ");
  if (at == std::string::npos) return values;
  std::istringstream line(output.substr(at + 12, output.find('\n', at) - at - 12));
  float value;
  while (line >> value) values.push_back(value);
  return values;
}

// y = 3 x0 - 2 x1 + 1 over `n` points, in batches of `batch`.
inline data::Dataset Regression(int64_t n, int64_t batch) {
  Tensor x(DataType::kFloat, TensorShape({n, 2}));
  Tensor y(DataType::kFloat, TensorShape({n, 1}));
  for (int64_t i = 0; i < n; ++i) {
    const float a = static_cast<float>((i * 7) % 13) / 6.5f - 1,
                b = static_cast<float>((i * 5) % 11) / 5.5f - 1;
    x.data<float>()[2 * i] = a;
    x.data<float>()[2 * i + 1] = b;
    y.data<float>()[i] = 3 * a - 2 * b + 1;
  }
  return data::Dataset::FromTensors({x, y}).Batch(batch);
}

// `n` examples of ten classes from 16 features, {x [n, 16], y [n]}: the class is the index of the
// largest of the first ten.
inline std::vector<Tensor> ClassExamples(int64_t n) {
  Tensor x(DataType::kFloat, TensorShape({n, 16}));
  Tensor y(DataType::kInt64, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t j = 0; j < 16; ++j) {
      const float v = static_cast<float>(((i * 31 + j * 17) % 29)) / 29.0f;
      x.data<float>()[i * 16 + j] = v;
      if (j < 10 && v > x.data<float>()[i * 16 + best]) best = j;
    }
    y.data<int64_t>()[i] = best;
  }
  return {x, y};
}

// ClassExamples in batches, shuffled before batching when shuffle_seed is not 0.
inline data::Dataset Classes(int64_t n, int64_t batch, uint64_t shuffle_seed = 0) {
  data::Dataset examples = data::Dataset::FromTensors(ClassExamples(n));
  if (shuffle_seed != 0) examples = examples.Shuffle(n, shuffle_seed);
  return examples.Batch(batch);
}

// ClassExamples as 4x4 one-channel images, in batches.
inline data::Dataset ImageClasses(int64_t n, int64_t batch) {
  std::vector<Tensor> examples = ClassExamples(n);
  examples[0] = examples[0].Reshaped(TensorShape({n, 4, 4, 1}));
  return data::Dataset::FromTensors(examples).Batch(batch);
}

inline std::unique_ptr<distribute::Strategy> Mirrored(int devices) {
  std::vector<std::string> names;
  for (int i = 0; i < devices; ++i) names.push_back("/cpu:" + std::to_string(i));
  auto strategy = distribute::MirroredStrategy::Create(names);
  EXPECT_TRUE(strategy.ok()) << strategy.status();
  return std::move(strategy).value();
}

struct TrainedClassifier {
  Status status;
  std::vector<double> losses;  // of each epoch Fit ran
  std::vector<float> predictions;
};

// Three epochs of four shuffled batches (a new order each epoch) of a fixed-seed classifier.
inline TrainedClassifier TrainClassifier(const distribute::Strategy* strategy,
                                         std::vector<Callback*> callbacks) {
  TrainedClassifier result;
  // Named, so that every model of this test process saves and restores the same names.
  Sequential model(
      Dense(32, "relu", {.name = "hidden", .kernel_initializer = Initializer::GlorotUniform(5)}),
      Dense(10, "", {.name = "logits", .kernel_initializer = Initializer::GlorotUniform(6)}));
  result.status = model.Compile(NewMomentumOptimizer(0.05, 0.9),
                                SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"},
                                {.strategy = strategy});
  if (!result.status.ok()) return result;
  auto history = model.Fit(Classes(256, 64, /*shuffle_seed=*/3),
                           {.epochs = 3, .callbacks = std::move(callbacks)});
  if (!history.ok()) {
    result.status = history.status();
    return result;
  }
  for (const Logs& logs : history->epochs) result.losses.push_back(logs.at("loss"));
  auto predicted = model.Predict(Classes(8, 8));
  result.status = predicted.status();
  if (predicted.ok()) {
    result.predictions.assign(predicted->data<float>(),
                              predicted->data<float>() + predicted->NumElements());
  }
  return result;
}

}  // namespace weft::train::testing
