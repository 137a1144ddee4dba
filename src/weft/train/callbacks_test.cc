// ModelCheckpoint with the other callbacks' state: a resumed run says where it resumed, its
// EarlyStopping stops where the uninterrupted run's did, save_best_only saves only improvements
// (also after a resume), resume = false only saves, and a checkpoint of a run with other
// callbacks still restores.
#include "weft/train/callbacks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/io/testing/io_test_util.h"
#include "weft/train/layers/core.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;
using train::testing::FailAtStep;
using train::testing::Regression;

struct TrainingRun {
  Status status;
  std::vector<int> epochs;  // History::epoch
  std::vector<std::string> reports;
  int stopped_epoch = -1;
  int64_t saves = 0;
};

// Up to 10 epochs of 2 batches of a linear regression whose learning rate drops to 0 after the
// first epoch, so the loss improves once more and then stays: EarlyStopping(patience 2) stops
// after epoch 4. The checkpoint comes first among the callbacks, so its epoch-end save must wait
// for EarlyStopping's OnEpochEnd.
TrainingRun TrainUntilStopped(const std::string& directory, std::vector<Callback*> more,
                              bool early_stopping = true) {
  TrainingRun run;
  Sequential model(Dense(1, "", {.name = "linear"}));
  run.status = model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError());
  if (!run.status.ok()) return run;
  ModelCheckpoint checkpoint(
      directory, {.report = [&](const std::string& line) { run.reports.push_back(line); }});
  EarlyStopping early("loss", /*patience=*/2);
  LearningRateScheduler schedule([](int epoch, double rate) { return epoch == 0 ? rate : 0.0; });
  std::vector<Callback*> callbacks = {&checkpoint};
  if (early_stopping) callbacks.push_back(&early);
  callbacks.push_back(&schedule);
  callbacks.insert(callbacks.end(), more.begin(), more.end());
  auto history =
      model.Fit(Regression(64, 16), {.epochs = 10, .steps_per_epoch = 2, .callbacks = callbacks});
  run.status = history.status();
  if (history.ok()) run.epochs = history->epoch;
  run.stopped_epoch = early.stopped_epoch();
  run.saves = checkpoint.saves();
  return run;
}

TEST(ModelCheckpointStateTest, AResumedRunStopsEarlyWhereTheUninterruptedOneDid) {
  io::testing::TempDir whole_directory;
  TrainingRun whole = TrainUntilStopped(whole_directory.path(), {});
  ASSERT_TRUE(whole.status.ok()) << whole.status;
  ASSERT_EQ(whole.stopped_epoch, 4);

  io::testing::TempDir directory;
  FailAtStep kill(7);  // epoch 4's first step (epoch 3 from 0), after epoch 3's save
  TrainingRun killed = TrainUntilStopped(directory.path(), {&kill});
  ASSERT_TRUE(IsAborted(killed.status)) << killed.status;
  TrainingRun resumed = TrainUntilStopped(directory.path(), {});
  ASSERT_TRUE(resumed.status.ok()) << resumed.status;
  ASSERT_FALSE(resumed.reports.empty());
  // Which checkpoint, which step.
  EXPECT_THAT(resumed.reports[0], HasSubstr(directory.path() + "/ckpt-6 at global step 6"));
  EXPECT_THAT(resumed.reports[0], HasSubstr("(epoch 4, batch 0)"));
  // Without the saved wait count it would start counting afresh and stop after epoch 6.
  EXPECT_EQ(resumed.stopped_epoch, 4);
  EXPECT_EQ(resumed.epochs, std::vector<int>({3, 4}));
}

TEST(ModelCheckpointStateTest, ACheckpointWithoutACallbacksStateRestoresAndSaysSo) {
  io::testing::TempDir directory;
  FailAtStep kill(5);
  TrainingRun without = TrainUntilStopped(directory.path(), {&kill}, /*early_stopping=*/false);
  ASSERT_TRUE(IsAborted(without.status)) << without.status;
  TrainingRun with = TrainUntilStopped(directory.path(), {});
  ASSERT_TRUE(with.status.ok()) << with.status;
  ASSERT_GE(with.reports.size(), 2u);
  EXPECT_THAT(with.reports[0], HasSubstr("at global step 4"));
  EXPECT_THAT(with.reports[1], HasSubstr("holds no early_stopping/loss/best"));
  EXPECT_THAT(with.reports[1], HasSubstr("start afresh"));
  // Counted afresh from epoch 2 (from 0): best at 2, waits 3, 4, 5.
  EXPECT_EQ(with.stopped_epoch, 5);
}

TEST(ModelCheckpointStateTest, ResumingWithoutAReportGoesToTheLog) {
  io::testing::TempDir directory;
  Sequential first(Dense(1, "", {.name = "linear"}));
  ASSERT_TRUE(first.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  ModelCheckpoint saving(directory.path());
  ASSERT_TRUE(first.Fit(Regression(32, 16), {.callbacks = {&saving}}).ok());

  Sequential second(Dense(1, "", {.name = "linear"}));
  ASSERT_TRUE(second.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  ModelCheckpoint resuming(directory.path());
  ::testing::internal::CaptureStderr();
  auto history = second.Fit(Regression(32, 16), {.epochs = 2, .callbacks = {&resuming}});
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_THAT(log, HasSubstr("resumed from checkpoint " + directory.path() + "/ckpt-2"));
  EXPECT_THAT(log, HasSubstr("at global step 2 (epoch 2, batch 0)"));

  // resume = false: trains from the start and only saves.
  Sequential third(Dense(1, "", {.name = "linear"}));
  ASSERT_TRUE(third.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  ModelCheckpoint fresh(directory.path(), {.resume = false});
  auto again = third.Fit(Regression(32, 16), {.epochs = 2, .callbacks = {&fresh}});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(fresh.resumed_from_step(), -1);
  EXPECT_EQ(again->epoch, std::vector<int>({0, 1}));
}

// Saves and the steps they were made at, for `mode` over 3 epochs of a decreasing loss.
int64_t SavesOfBestOnly(const std::string& directory, const std::string& mode, int epochs,
                        int64_t* resumed_from = nullptr) {
  Sequential model(Dense(1, "", {.name = "linear"}));
  EXPECT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  ModelCheckpoint best(directory, {.save_best_only = true, .monitor = "loss", .mode = mode});
  auto history = model.Fit(Regression(64, 16), {.epochs = epochs, .callbacks = {&best}});
  EXPECT_TRUE(history.ok()) << history.status();
  if (resumed_from != nullptr) *resumed_from = best.resumed_from_step();
  return best.saves();
}

TEST(ModelCheckpointStateTest, SaveBestOnlySavesTheEpochsThatImproved) {
  {
    io::testing::TempDir directory;
    EXPECT_EQ(SavesOfBestOnly(directory.path(), "min", 3), 3);  // the loss falls every epoch
  }
  io::testing::TempDir directory;
  // "max": only the first epoch is a best; nothing is saved at the end.
  EXPECT_EQ(SavesOfBestOnly(directory.path(), "max", 3), 1);
  // A resumed run (from the best, epoch 1's end) compares with the best it restored: the epochs
  // after it have lower losses, so nothing is saved.
  int64_t resumed_from = -1;
  EXPECT_EQ(SavesOfBestOnly(directory.path(), "max", 3, &resumed_from), 0);
  EXPECT_EQ(resumed_from, 4);
}

TEST(ModelCheckpointStateTest, BadSaveBestOnlyOptionsAreNamed) {
  for (auto [options, expected] :
       {std::pair<ModelCheckpointOptions, std::string>{
            {.save_every_steps = 3, .save_best_only = true}, "save_every_steps must be 0"},
        {{.save_best_only = true, .mode = "median"}, "mode must be min, max or auto"}}) {
    Sequential model(Dense(1));
    ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
    io::testing::TempDir directory;
    ModelCheckpoint checkpoint(directory.path(), options);
    Status status = model.Fit(Regression(16, 8), {.callbacks = {&checkpoint}}).status();
    EXPECT_THAT(status.message(), HasSubstr(expected));
  }
  // The monitor must be logged.
  Sequential model(Dense(1));
  ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  io::testing::TempDir directory;
  ModelCheckpoint checkpoint(directory.path(), {.save_best_only = true});
  Status status = model.Fit(Regression(16, 8), {.callbacks = {&checkpoint}}).status();
  EXPECT_THAT(status.message(), HasSubstr("no 'val_loss'"));
}

}  // namespace
}  // namespace weft::train
