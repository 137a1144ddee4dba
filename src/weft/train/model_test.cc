// Model: Compile/Fit/Evaluate/Predict on one device, under MirroredStrategy (on CPUs and on
// TEST_ARENA devices) and under CentralStorageStrategy, Summary, the
// callbacks, and the errors a user can make.
#include "weft/train/model.h"

#include <cstdio>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/distribute/central_storage_strategy.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/test_arena_device.h"
#include "weft/train/callbacks.h"
#include "weft/train/layers/convolutional.h"
#include "weft/train/layers/core.h"
#include "weft/train/layers/normalization.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;
using train::testing::Classes;
using train::testing::FailAtStep;
using train::testing::Mirrored;
using train::testing::Regression;
using train::testing::TrainClassifier;
using train::testing::TrainedClassifier;

TEST(ModelTest, ALinearRegressionLearnsItsCoefficients) {
  Sequential model(Dense(1, "", {.kernel_initializer = Initializer::GlorotUniform(3)}));
  ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError(), {"mse"}).ok());
  auto history = model.Fit(Regression(256, 32), {.epochs = 40});
  ASSERT_TRUE(history.ok()) << history.status();
  ASSERT_EQ(history->epochs.size(), 40u);
  EXPECT_LT(history->epochs.back().at("loss"), 1e-3);
  EXPECT_LT(history->epochs.back().at("loss"), history->epochs.front().at("loss"));
  EXPECT_NEAR(history->epochs.back().at("mean_squared_error"), history->epochs.back().at("loss"),
              1e-4);
  auto evaluated = model.Evaluate(Regression(64, 64));
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  EXPECT_LT(evaluated->at("loss"), 1e-3);
  auto predicted = model.Predict(Regression(10, 4));
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->shape(), TensorShape({10, 1}));
  EXPECT_NEAR(predicted->data<float>()[0], 3 * -1.0f - 2 * -1.0f + 1, 0.05);
  EXPECT_EQ(model.trainable_variables().size(), 2u);
}

// The loss of every epoch, training a small classifier with a fixed seed on `strategy` (whose
// devices `factories` make, running `kernels`; null: CPU).
std::vector<double> ClassifierLosses(const distribute::Strategy* strategy, bool normalize,
                                     const DeviceFactoryRegistry* factories = nullptr,
                                     const KernelRegistry* kernels = nullptr) {
  Dense hidden(32, "relu", {.kernel_initializer = Initializer::GlorotUniform(5)});
  BatchNormalization norm;
  Dense logits(10, "", {.kernel_initializer = Initializer::GlorotUniform(6)});
  Model model([&](const Scope& scope, const Output& x) {
    Output h = hidden(scope, x);
    return logits(scope, normalize ? norm(scope, h) : h);
  });
  Status compiled = model.Compile(
      NewMomentumOptimizer(0.05, 0.9), SparseCategoricalCrossentropy(/*from_logits=*/true),
      {"accuracy"},
      {.strategy = strategy, .device_factories = factories, .kernel_registry = kernels});
  EXPECT_TRUE(compiled.ok()) << compiled;
  auto history = model.Fit(Classes(512, 64), {.epochs = 3});
  EXPECT_TRUE(history.ok()) << history.status();
  std::vector<double> losses;
  if (!history.ok()) return losses;
  for (const Logs& logs : history->epochs) losses.push_back(logs.at("loss"));
  EXPECT_GT(history->epochs.back().at("accuracy"), 0.2);
  return losses;
}

TEST(ModelTest, FitGivesTheSameLossOnOneDeviceAndOnTwoMirroredReplicas) {
  std::vector<double> one = ClassifierLosses(nullptr, false);
  auto mirrored = Mirrored(2);
  std::vector<double> two = ClassifierLosses(mirrored.get(), false);
  ASSERT_EQ(one.size(), 3u);
  ASSERT_EQ(two.size(), 3u);
  for (size_t e = 0; e < one.size(); ++e) EXPECT_NEAR(one[e], two[e], 1e-5) << "epoch " << e;
  EXPECT_LT(one.back(), one.front());
}

// Two TEST_ARENA devices: memory of their own (every batch, gradient and fetched metric crosses
// memories through their DeviceContexts) and asynchronous streams; the losses are the CPUs'.
TEST(ModelTest, FitOnTwoMirroredArenaDevicesGivesTheLossesOfTwoMirroredCpus) {
  auto cpus = Mirrored(2);
  auto arenas = distribute::MirroredStrategy::Create(
      {StrCat("/device:", weft::testing::kTestArenaDeviceType, ":0"),
       StrCat("/device:", weft::testing::kTestArenaDeviceType, ":1")});
  ASSERT_TRUE(arenas.ok()) << arenas.status();
  std::vector<double> on_cpus = ClassifierLosses(cpus.get(), false);
  weft::testing::ResetArenaCopyStats();
  std::vector<double> on_arenas =
      ClassifierLosses(arenas->get(), false, &weft::testing::TestArenaDeviceFactories(),
                       &weft::testing::TestArenaKernels());
  EXPECT_GT(weft::testing::GetArenaCopyStats().total(), 0);
  ASSERT_EQ(on_cpus.size(), 3u);
  ASSERT_EQ(on_arenas.size(), 3u);
  for (size_t e = 0; e < on_cpus.size(); ++e) {
    EXPECT_NEAR(on_cpus[e], on_arenas[e], 1e-5) << "epoch " << e;
  }
}

TEST(ModelTest, CentralStorageGivesTheSameLossAsMirroredForTheSameGlobalBatch) {
  for (bool normalize : {false, true}) {
    SCOPED_TRACE(normalize ? "with batch normalization" : "dense only");
    auto mirrored = Mirrored(2);
    std::vector<double> two_mirrored = ClassifierLosses(mirrored.get(), normalize);
    auto central = distribute::CentralStorageStrategy::Create({"/cpu:0", "/cpu:1"});
    ASSERT_TRUE(central.ok()) << central.status();
    std::vector<double> two_central = ClassifierLosses(central->get(), normalize);
    ASSERT_EQ(two_mirrored.size(), 3u);
    ASSERT_EQ(two_central.size(), 3u);
    for (size_t e = 0; e < two_mirrored.size(); ++e) {
      EXPECT_NEAR(two_central[e], two_mirrored[e], 1e-5) << "epoch " << e;
    }
    // Every variable that is not kept per replica (metric totals, moving statistics) is stored
    // once.
    for (const auto& variable : (*central)->variables()) {
      if (variable->synchronization() == VariableSynchronization::kOnRead) continue;
      EXPECT_EQ(variable->num_components(), 1) << variable->name();
    }
  }
}

TEST(ModelTest, BatchNormalizationMovingStatisticsAgreeAcrossReplicas) {
  auto strategy = Mirrored(2);
  BatchNormalization norm({.momentum = 0.5});
  Dense logits(10, "", {.kernel_initializer = Initializer::GlorotUniform(6)});
  Model model([&](const Scope& scope, const Output& x) { return logits(scope, norm(scope, x)); });
  ASSERT_TRUE(model
                  .Compile(NewGradientDescentOptimizer(0.01), SparseCategoricalCrossentropy(true),
                           {}, {.strategy = strategy.get()})
                  .ok());
  // The replicas see different halves of every batch, so their moving statistics differ until
  // Fit synchronises them (the mean) at the end of the epoch.
  ASSERT_TRUE(model.Fit(Classes(256, 64), {.epochs = 1}).ok());
  int on_read = 0;
  for (const auto& variable : strategy->variables()) {
    on_read += variable->synchronization() == VariableSynchronization::kOnRead;
  }
  EXPECT_EQ(on_read, 2);  // moving mean and variance
  // A batch of two equal examples splits one per replica: both replicas must predict alike, in
  // inference mode (the moving statistics).
  Tensor x(DataType::kFloat, TensorShape({2, 16}));
  for (int64_t i = 0; i < 32; ++i) x.data<float>()[i] = static_cast<float>(i % 16) / 16.0f;
  auto predicted = model.Predict(data::Dataset::FromTensors({x}).Batch(2));
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  for (int j = 0; j < 10; ++j) {
    EXPECT_EQ(predicted->data<float>()[j], predicted->data<float>()[10 + j]) << "logit " << j;
  }
}

// Two models compiled with one strategy keep apart: building the second neither initializes nor
// checkpoints the first's variables.
TEST(ModelTest, TwoModelsShareAStrategyWithoutTouchingEachOther) {
  auto strategy = Mirrored(2);
  Sequential first(Dense(1, "", {.kernel_initializer = Initializer::GlorotUniform(2)}));
  ASSERT_TRUE(first
                  .Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError(), {},
                           {.strategy = strategy.get()})
                  .ok());
  ASSERT_TRUE(first.Fit(Regression(64, 16), {.epochs = 5}).ok());
  auto trained = first.Predict(Regression(4, 4));
  ASSERT_TRUE(trained.ok()) << trained.status();
  Sequential second(Dense(1, "", {.kernel_initializer = Initializer::GlorotUniform(3)}));
  ASSERT_TRUE(second
                  .Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError(), {},
                           {.strategy = strategy.get()})
                  .ok());
  ASSERT_TRUE(second.Fit(Regression(64, 16)).ok());
  EXPECT_EQ(second.distributed_variables().size(), first.distributed_variables().size());
  auto again = first.Predict(Regression(4, 4));
  ASSERT_TRUE(again.ok()) << again.status();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(again->data<float>()[i], trained->data<float>()[i]);
}

TEST(ModelTest, SummaryListsLayersShapesAndParameters) {
  Sequential model(Conv2D(4, 3, "relu", {.name = "conv"}), MaxPooling2D(2, {.name = "pool"}),
                   Flatten("flat"), Dense(10, "", {.name = "logits"}));
  EXPECT_FALSE(model.Summary().ok());
  ASSERT_TRUE(
      model.Compile(NewGradientDescentOptimizer(0.1), SparseCategoricalCrossentropy(true)).ok());
  ASSERT_TRUE(model.Build({PartialShape({8, 8, 1}), DataType::kFloat}).ok());
  auto summary = model.Summary();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_THAT(*summary, HasSubstr("conv (Conv2D)"));
  EXPECT_THAT(*summary, HasSubstr("(None, 6, 6, 4)"));
  EXPECT_THAT(*summary, HasSubstr("pool (MaxPooling2D)"));
  EXPECT_THAT(*summary, HasSubstr("(None, 36)"));
  EXPECT_THAT(*summary, HasSubstr("370"));  // 36 * 10 + 10
  EXPECT_THAT(*summary, HasSubstr("Total params: 410"));
}

class CountingCallback final : public Callback {
 public:
  Status OnTrainBegin(Model&) override { return ++begins, Status::OK(); }
  Status OnTrainBatchEnd(Model&, const Logs& logs) override {
    ++batches;
    EXPECT_EQ(logs.count("loss"), 1u);
    return Status::OK();
  }
  Status OnEpochEnd(Model&, int, const Logs& logs) override {
    epochs.push_back(logs);
    return Status::OK();
  }
  int begins = 0, batches = 0;
  std::vector<Logs> epochs;
};

TEST(CallbacksTest, EarlyStoppingScheduleAndLogger) {
  io::testing::TempDir directory;
  const std::string log_path = directory.path() + "/log.jsonl";
  Sequential model(Dense(1));
  ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  CountingCallback counting;
  // A learning rate of 0 from the second epoch: the loss stops improving, so training stops.
  LearningRateScheduler schedule([](int epoch, double rate) { return epoch == 0 ? rate : 0.0; });
  EarlyStopping early("loss", /*patience=*/1);
  JsonLinesLogger logger(log_path);
  auto history = model.Fit(
      Regression(64, 16),
      {.epochs = 10, .steps_per_epoch = 2, .callbacks = {&schedule, &early, &logger, &counting}});
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_EQ(model.learning_rate(), 0.0);
  EXPECT_LT(history->epochs.size(), 10u);
  EXPECT_EQ(early.stopped_epoch(), static_cast<int>(history->epochs.size()) - 1);
  EXPECT_EQ(counting.begins, 1);
  EXPECT_EQ(counting.batches, 2 * static_cast<int>(history->epochs.size()));
  std::ifstream log(log_path);
  std::string line;
  int lines = 0;
  while (std::getline(log, line) && lines < 100) {
    ++lines;
    EXPECT_THAT(line, HasSubstr("\"epoch\": " + std::to_string(lines)));
    EXPECT_THAT(line, HasSubstr("\"loss\": "));
  }
  EXPECT_EQ(lines, static_cast<int>(history->epochs.size()));
}

// A logger that cannot open its file, a checkpoint that cannot write its directory (its final
// save, the one that must land), a monitor that is not logged.
TEST(CallbacksTest, ACallbackThatCannotDoItsJobFailsFitNamingWhy) {
  JsonLinesLogger logger("/nonexistent-directory/log.jsonl");
  ModelCheckpoint checkpoint("/proc/weft-cannot-write-here");
  for (auto [callback, path] :
       {std::pair<Callback*, std::string>{&logger, "/nonexistent-directory/log.jsonl"},
        {&checkpoint, "/proc/weft-cannot-write-here"}}) {
    Sequential model(Dense(1));
    ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
    auto history = model.Fit(Regression(16, 8), {.callbacks = {callback}});
    ASSERT_FALSE(history.ok());
    EXPECT_THAT(history.status().message(), HasSubstr(path));
  }
  EarlyStopping early("val_accuracy");
  Sequential other(Dense(1));
  ASSERT_TRUE(other.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  auto stopped = other.Fit(Regression(16, 8), {.callbacks = {&early}});
  ASSERT_FALSE(stopped.ok());
  EXPECT_THAT(stopped.status().message(), HasSubstr("no 'val_accuracy'"));
}

TEST(ModelCheckpointTest, AKilledFitResumesAndEndsAsAnUninterruptedOneOnAnyReplicaCount) {
  TrainedClassifier uninterrupted = TrainClassifier(nullptr, {});
  ASSERT_TRUE(uninterrupted.status.ok()) << uninterrupted.status;
  ASSERT_EQ(uninterrupted.losses.size(), 3u);

  io::testing::TempDir directory;
  // Saves after steps 3 and 6, killed at step 7 (epoch 2, batch 3).
  ModelCheckpoint saving(directory.path(), {.save_every_steps = 3});
  FailAtStep kill(7);
  TrainedClassifier killed = TrainClassifier(nullptr, {&saving, &kill});
  EXPECT_TRUE(IsAborted(killed.status)) << killed.status;
  EXPECT_EQ(saving.saves(), 2);

  // The same program again: resumes after step 6 (epoch 2, batch 2) and ends as the first run.
  std::vector<std::string> reports;
  ModelCheckpoint resuming(
      directory.path(),
      {.save_every_steps = 3, .report = [&](const std::string& line) { reports.push_back(line); }});
  TrainedClassifier resumed = TrainClassifier(nullptr, {&resuming});
  ASSERT_TRUE(resumed.status.ok()) << resumed.status;
  ASSERT_FALSE(reports.empty());
  EXPECT_THAT(reports[0], HasSubstr("at global step 6 (epoch 2, batch 2)"));
  ASSERT_EQ(resumed.losses.size(), 2u);  // epochs 2 and 3
  EXPECT_NEAR(resumed.losses[0], uninterrupted.losses[1], 1e-5);
  EXPECT_NEAR(resumed.losses[1], uninterrupted.losses[2], 1e-5);
  ASSERT_EQ(resumed.predictions.size(), uninterrupted.predictions.size());
  for (size_t i = 0; i < resumed.predictions.size(); ++i) {
    EXPECT_NEAR(resumed.predictions[i], uninterrupted.predictions[i], 1e-4) << "output " << i;
  }

  // The finished run's last checkpoint restores into two mirrored replicas: nothing left to
  // train, the same predictions.
  auto strategy = Mirrored(2);
  ModelCheckpoint mirrored_restore(directory.path());
  TrainedClassifier restored = TrainClassifier(strategy.get(), {&mirrored_restore});
  ASSERT_TRUE(restored.status.ok()) << restored.status;
  ASSERT_EQ(restored.predictions.size(), uninterrupted.predictions.size());
  for (size_t i = 0; i < restored.predictions.size(); ++i) {
    EXPECT_NEAR(restored.predictions[i], uninterrupted.predictions[i], 1e-4) << "output " << i;
  }
}

TEST(ModelErrorsTest, NameWhatIsWrong) {
  Sequential model(Dense(1));
  EXPECT_THAT(model.Fit(Regression(16, 8)).status().message(), HasSubstr("is not compiled"));
  EXPECT_THAT(model.Compile(nullptr, MeanSquaredError()).message(),
              HasSubstr("optimizer is missing"));
  EXPECT_THAT(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError(), {"f1"}).message(),
              HasSubstr("unknown metric 'f1'"));
  ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  EXPECT_THAT(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).message(),
              HasSubstr("already compiled"));
  // Unbatched elements, and a dataset with inputs only.
  Tensor x(DataType::kFloat, TensorShape({4, 2}));
  Tensor y(DataType::kFloat, TensorShape({4}));
  EXPECT_THAT(model.Fit(data::Dataset::FromTensors({x, y})).status().message(),
              HasSubstr("needs batched elements"));
  EXPECT_THAT(model.Fit(data::Dataset::FromTensors({x}).Batch(2)).status().message(),
              HasSubstr("2 components (inputs, labels)"));
  EXPECT_THAT(model.Fit(Regression(16, 8), {.epochs = 0}).status().message(),
              HasSubstr("epochs must be positive"));
  // A built model refuses inputs of another shape.
  ASSERT_TRUE(model.Fit(Regression(16, 8)).ok());
  Tensor wide(DataType::kFloat, TensorShape({4, 3}));
  EXPECT_THAT(model.Predict(data::Dataset::FromTensors({wide}).Batch(2)).status().message(),
              HasSubstr("was built for inputs float32 [?,2]"));
}

TEST(ModelErrorsTest, AStrategyOnAnUnknownDeviceTypeNamesItAndTheRegisteredTypes) {
  auto strategy = distribute::MirroredStrategy::Create({"/device:XPU:0", "/device:XPU:1"});
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  Sequential model(Dense(1, "", {.kernel_initializer = Initializer::GlorotUniform(3)}));
  Status status = model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError(), {"mse"},
                                {.strategy = strategy->get()});
  if (status.ok()) status = model.Fit(Regression(8, 4), {.epochs = 1}).status();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("unknown device type 'XPU'"));
  EXPECT_THAT(status.message(), HasSubstr("registered types: CPU"));
}

TEST(ModelErrorsTest, AnUnevenTrainingBatchOnTwoReplicasIsRefusedButEvaluationTakesIt) {
  auto strategy = Mirrored(2);
  Sequential model(Dense(1, "", {.kernel_initializer = Initializer::GlorotUniform(2)}));
  ASSERT_TRUE(model
                  .Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError(), {},
                           {.strategy = strategy.get()})
                  .ok());
  auto history = model.Fit(Regression(15, 8));  // batches of 8 and 7
  ASSERT_FALSE(history.ok());
  EXPECT_THAT(history.status().message(),
              HasSubstr("a training batch of 7 examples does not split evenly over 2 replicas"));
  auto evaluated = model.Evaluate(Regression(15, 8));
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  auto predicted = model.Predict(Regression(15, 8));
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->dim_size(0), 15);
}

}  // namespace
}  // namespace weft::train
