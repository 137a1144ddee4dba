#include "weft/train/train_loop.h"

#include <cmath>
#include <cstdio>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/data/testing/idx_test_util.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/train/workloads.h"

namespace weft::train {
namespace {

using data::testing::Bytes;
using data::testing::Gzip;
using data::testing::IdxBytes;
using data::testing::WriteBytes;
using io::testing::TempDir;

// A small Fashion-MNIST-shaped dataset that is easy to learn: class c lights up row c.
void WriteToyFashionMnist(const TempDir& dir, int train_count, int test_count) {
  auto write = [&](const std::string& prefix, int count) {
    Bytes images(static_cast<size_t>(count) * 28 * 28, 0);
    Bytes labels(count);
    for (int i = 0; i < count; ++i) {
      int label = i % 10;
      labels[i] = static_cast<uint8_t>(label);
      for (int x = 0; x < 28; ++x) images[static_cast<size_t>(i) * 784 + label * 28 + x] = 200;
    }
    WriteBytes(dir.File(prefix + "-images-idx3-ubyte.gz"),
               Gzip(IdxBytes({static_cast<uint32_t>(count), 28, 28}, images)));
    WriteBytes(dir.File(prefix + "-labels-idx1-ubyte.gz"),
               Gzip(IdxBytes({static_cast<uint32_t>(count)}, labels, 0x08)));
  };
  write("train", train_count);
  write("t10k", test_count);
}

// Two epochs of 32-example batches over a toy set of 640 examples written to `dir`: 40 steps.
TrainOptions ToyOptions(TempDir& dir) {
  WriteToyFashionMnist(dir, 640, 100);
  TrainOptions options;
  options.data_dir = dir.path();
  options.epochs = 2;
  options.batch_size = 32;
  options.seed = 3;
  return options;
}

TrainCallbacks CountSteps(int* steps_seen) {
  TrainCallbacks callbacks;
  callbacks.on_step = [steps_seen](const TrainProgress&) { ++*steps_seen; };
  return callbacks;
}

TEST(TrainLoopTest, LearnsAToyProblemAndRepeatsWithTheSameSeed) {
  TempDir dir;
  TrainOptions options = ToyOptions(dir);
  int steps_seen = 0;
  TrainCallbacks callbacks = CountSteps(&steps_seen);
  auto first = Train(options, callbacks);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->steps, 40);
  EXPECT_EQ(steps_seen, 40);
  EXPECT_GT(first->test_accuracy, 0.9);
  EXPECT_GT(first->train_images_per_sec, 0);
  auto second = Train(options);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->final_loss, second->final_loss);  // bitwise: same seed, same threads
  options.seed = 4;
  auto other = Train(options);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(first->final_loss, other->final_loss);
}

TEST(TrainLoopTest, MaxStepsStopsEarlyAndEveryOptimizerRuns) {
  TempDir dir;
  WriteToyFashionMnist(dir, 320, 50);
  for (const char* optimizer : {"sgd", "momentum", "adam"}) {
    TrainOptions options;
    options.data_dir = dir.path();
    options.max_steps = 5;
    options.batch_size = 16;
    options.optimizer = optimizer;
    options.learning_rate = std::string(optimizer) == "adam" ? 0.001 : 0.05;
    auto summary = Train(options);
    ASSERT_TRUE(summary.ok()) << optimizer << ": " << summary.status();
    EXPECT_EQ(summary->steps, 5) << optimizer;
    EXPECT_TRUE(std::isfinite(summary->final_loss)) << optimizer;
  }
}

// The throughput can leave the first steps out (the peers' benchmarks do), and counts every step
// when the run has no more than those; neither changes what is trained.
TEST(TrainLoopTest, ThroughputWarmupStepsAreLeftOutOfTheThroughput) {
  TempDir dir;
  WriteToyFashionMnist(dir, 320, 50);
  TrainOptions options;
  options.data_dir = dir.path();
  options.max_steps = 6;
  options.batch_size = 16;
  auto all = Train(options);
  ASSERT_TRUE(all.ok()) << all.status();
  for (int64_t warmup : {5, 6, 100}) {
    options.throughput_warmup_steps = warmup;
    auto timed = Train(options);
    ASSERT_TRUE(timed.ok()) << timed.status();
    EXPECT_GT(timed->train_images_per_sec, 0) << warmup;
    EXPECT_TRUE(std::isfinite(timed->train_images_per_sec)) << warmup;
    EXPECT_EQ(timed->final_loss, all->final_loss) << warmup;
  }
}

TEST(TrainLoopTest, ACnnStepRuns) {
  TempDir dir;
  WriteToyFashionMnist(dir, 64, 20);
  TrainOptions options;
  options.model = ModelKind::kCnn;
  options.data_dir = dir.path();
  options.max_steps = 2;
  options.batch_size = 8;
  auto summary = Train(options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->steps, 2);
}

TEST(TrainLoopTest, BadOptionsAndMissingDataAreReported) {
  TrainOptions options;
  options.data_dir = "/nonexistent/fashion";
  Status s = Train(options).status();
  EXPECT_TRUE(IsNotFound(s)) << s;
  EXPECT_NE(s.message().find("/nonexistent/fashion"), std::string::npos) << s;
  EXPECT_NE(s.message().find("dataset-fashion-mnist"), std::string::npos) << s;
  options.batch_size = 0;
  EXPECT_TRUE(IsInvalidArgument(Train(options).status()));
  TempDir dir;
  WriteToyFashionMnist(dir, 32, 10);
  TrainOptions bad_optimizer;
  bad_optimizer.data_dir = dir.path();
  bad_optimizer.optimizer = "rmsprop";
  s = Train(bad_optimizer).status();
  EXPECT_NE(s.message().find("rmsprop"), std::string::npos) << s;
}

TEST(TrainLoopTest, TwoDevicesTrainAMirroredModelLikeOne) {
  TempDir dir;
  TrainOptions options = ToyOptions(dir);
  auto one = Train(options);
  ASSERT_TRUE(one.ok()) << one.status();
  options.devices = 2;
  int steps_seen = 0;
  TrainCallbacks callbacks = CountSteps(&steps_seen);
  auto two = Train(options, callbacks);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->replicas, 2);
  EXPECT_EQ(one->replicas, 1);
  EXPECT_EQ(two->steps, 40);  // 32 examples a step in all, 16 per replica
  EXPECT_EQ(steps_seen, 40);
  EXPECT_GT(two->test_accuracy, 0.9);
  EXPECT_NEAR(two->final_loss, one->final_loss, 1e-3 + 1e-2 * one->final_loss);
  auto again = Train(options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(two->final_loss, again->final_loss);  // deterministic across runs
}

TEST(TrainLoopTest, StepBreakdownTracesTheAskedSteps) {
  TempDir dir;
  TrainOptions options = ToyOptions(dir);
  options.devices = 2;
  options.max_steps = kStepBreakdownWarmup + 5;
  options.step_breakdown_steps = 3;
  auto summary = Train(options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const std::string& text = summary->step_breakdown;
  EXPECT_NE(text.find("over 3 traced steps"), std::string::npos) << text;
  for (const char* expected :
       {"device:CPU:0: ops ran", "device:CPU:1: ops ran", "MatMul", "CollectiveAllReduce"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << " in\n" << text;
  }
  options.step_breakdown_steps = 0;
  auto untraced = Train(options);
  ASSERT_TRUE(untraced.ok()) << untraced.status();
  EXPECT_EQ(untraced->step_breakdown, "");
  EXPECT_EQ(untraced->final_loss, summary->final_loss);  // tracing changes no result
}

TEST(TrainLoopTest, StrategiesByNameAndACnnOnTwoDevices) {
  TempDir dir;
  WriteToyFashionMnist(dir, 64, 20);
  TrainOptions options;
  options.data_dir = dir.path();
  options.max_steps = 3;
  options.batch_size = 8;
  auto plain = Train(options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const char* strategy : {"one_device", "mirrored"}) {
    options.strategy = strategy;
    auto summary = Train(options);
    ASSERT_TRUE(summary.ok()) << strategy << ": " << summary.status();
    EXPECT_EQ(summary->replicas, 1) << strategy;
    // One replica: the same computation as the plain path, on the same single device.
    EXPECT_EQ(summary->final_loss, plain->final_loss) << strategy;
  }
  options.strategy = "mirrored";
  options.devices = 2;
  options.model = ModelKind::kCnn;
  options.optimizer = "adam";
  options.learning_rate = 0.001;
  auto cnn = Train(options);
  ASSERT_TRUE(cnn.ok()) << cnn.status();
  EXPECT_EQ(cnn->replicas, 2);
  EXPECT_TRUE(std::isfinite(cnn->final_loss));
}

TEST(TrainLoopTest, BadDeviceOptionsAreRefusedBeforeTraining) {
  TrainOptions options;
  options.data_dir = "/nonexistent/fashion";  // never read: the options fail first
  options.devices = 0;
  Status s = Train(options).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("devices"), std::string::npos) << s;
  options.devices = 2;
  options.strategy = "one_device";
  s = Train(options).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("one_device"), std::string::npos) << s;
  options.strategy = "parameter_server";
  s = Train(options).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("parameter_server"), std::string::npos) << s;
  options.strategy = "mirrored";
  options.devices = 3;
  options.batch_size = 128;
  s = Train(options).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("128"), std::string::npos) << s;
  EXPECT_NE(s.message().find("3 devices"), std::string::npos) << s;
  options.devices = 2;
  options.device_type = "XPU";
  s = Train(options).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("unknown device type 'XPU'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("registered types: CPU"), std::string::npos) << s;
}

// A run stopped at global step 17 and resumed from its checkpoint ends exactly as one that never
// stopped: same final loss and weights, bitwise (variables, slots, global step and input position
// all restored), on one device and mirrored over two, with each optimizer's slots.
TEST(TrainLoopTest, AResumedRunEndsLikeAnUninterruptedOne) {
  TempDir dir;
  TrainOptions options = ToyOptions(dir);
  options.save_every_steps = 7;
  for (int devices : {1, 2}) {
    for (const char* optimizer : {"momentum", "adam"}) {
      SCOPED_TRACE(StrCat(devices, " devices, ", optimizer));
      options.devices = devices;
      options.optimizer = optimizer;
      options.learning_rate = std::string(optimizer) == "adam" ? 0.001 : 0.05;
      options.checkpoint_dir = dir.File(StrCat("straight-", devices, optimizer));
      options.max_steps = -1;
      auto straight = Train(options);
      ASSERT_TRUE(straight.ok()) << straight.status();
      EXPECT_EQ(straight->resumed_from_step, -1);
      EXPECT_EQ(straight->checkpoints_saved, 6);  // steps 7, 14, ..., 35 and the end (40)

      options.checkpoint_dir = dir.File(StrCat("stopped-", devices, optimizer));
      options.max_steps = 17;
      auto first = Train(options);
      ASSERT_TRUE(first.ok()) << first.status();
      EXPECT_EQ(first->steps, 17);
      std::vector<std::string> reports;
      TrainCallbacks callbacks;
      callbacks.on_checkpoint = [&](const std::string& line) { reports.push_back(line); };
      options.max_steps = -1;
      auto resumed = Train(options, callbacks);
      ASSERT_TRUE(resumed.ok()) << resumed.status();
      EXPECT_EQ(resumed->resumed_from_step, 17);
      EXPECT_EQ(resumed->steps, 40);
      EXPECT_EQ(resumed->final_loss, straight->final_loss);
      EXPECT_EQ(resumed->variables_fingerprint, straight->variables_fingerprint);
      ASSERT_FALSE(reports.empty());
      EXPECT_NE(reports[0].find("resumed from checkpoint"), std::string::npos) << reports[0];
      EXPECT_NE(reports[0].find("global step 17"), std::string::npos) << reports[0];
      // Run again: it resumes at its end and trains no further.
      auto again = Train(options);
      ASSERT_TRUE(again.ok()) << again.status();
      EXPECT_EQ(again->resumed_from_step, 40);
      EXPECT_EQ(again->variables_fingerprint, straight->variables_fingerprint);
    }
  }
}

// Background saves do not change what is trained, and a checkpoint of one device resumes on two.
TEST(TrainLoopTest, AsyncSavesAndAnotherReplicaCountResume) {
  TempDir dir;
  TrainOptions options = ToyOptions(dir);
  auto plain = Train(options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  options.checkpoint_dir = dir.File("async");
  options.save_every_steps = 5;
  options.async_checkpoints = true;
  auto async = Train(options);
  ASSERT_TRUE(async.ok()) << async.status();
  EXPECT_EQ(async->final_loss, plain->final_loss);
  EXPECT_EQ(async->variables_fingerprint, plain->variables_fingerprint);
  EXPECT_EQ(async->checkpoints_saved, 8);

  options.checkpoint_dir = dir.File("one-then-two");
  options.async_checkpoints = false;
  options.max_steps = 10;
  ASSERT_TRUE(Train(options).ok());
  options.max_steps = -1;
  options.devices = 2;
  auto two = Train(options);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->resumed_from_step, 10);
  EXPECT_EQ(two->steps, 40);
  EXPECT_GT(two->test_accuracy, 0.9);
}

// A checkpoint of another model is refused naming the tensor and both shapes; a corrupt one
// names the file.
TEST(TrainLoopTest, ACheckpointOfAnotherModelIsRefused) {
  TempDir dir;
  TrainOptions options = ToyOptions(dir);
  options.checkpoint_dir = dir.File("mlp");
  options.max_steps = 2;
  ASSERT_TRUE(Train(options).ok());
  options.model = ModelKind::kCnn;
  options.batch_size = 8;
  Status refused = Train(options).status();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find(dir.File("mlp")), std::string::npos) << refused;
  options.model = ModelKind::kMlp;
  options.batch_size = 32;
  WriteBytes(dir.File("mlp/ckpt-2/shard-00000-of-00001.safetensors"), Bytes(64, 7));
  Status corrupt = Train(options).status();
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.message().find("shard-00000-of-00001.safetensors"), std::string::npos)
      << corrupt;
}

// A save that fails mid-run (here the directory is replaced by a file after the first save) is
// reported with the path, and training goes on; once the directory is back, later saves land
// and the run ends with its final checkpoint.
TEST(TrainLoopTest, AFailedSaveIsReportedAndTrainingGoesOn) {
  TempDir dir;
  TrainOptions options = ToyOptions(dir);
  options.checkpoint_dir = dir.File("run");
  options.save_every_steps = 5;
  const std::string run = dir.File("run");
  const std::string aside = dir.File("aside");
  std::vector<std::string> failures;
  int saves = 0;
  TrainCallbacks callbacks;
  callbacks.on_checkpoint = [&](const std::string& line) {
    if (line.find("saved checkpoint") != std::string::npos && ++saves == 1) {
      ASSERT_EQ(std::rename(run.c_str(), aside.c_str()), 0);
      WriteBytes(run, Bytes(4, 1));
    }
    if (line.find("save failed") != std::string::npos) {
      failures.push_back(line);
      if (failures.size() == 2) {
        ASSERT_EQ(std::remove(run.c_str()), 0);
        ASSERT_EQ(std::rename(aside.c_str(), run.c_str()), 0);
      }
    }
  };
  auto summary = Train(options, callbacks);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->steps, 40);
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_NE(failures[0].find(run), std::string::npos) << failures[0];
  EXPECT_EQ(summary->checkpoints_saved, 8 - 2);
  // The last checkpoint is there and resumes at the end.
  auto again = Train(options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->resumed_from_step, 40);
}

}  // namespace
}  // namespace weft::train

namespace weft::train {
namespace {

// Under parameter_server the default optimizer, Adam, decays by a cosine to a tenth over the run;
// an optimizer the user names keeps its constant rate, as do the synchronous strategies'.
TEST(TrainLoopTest, TheParameterServerDefaultDecaysOverTheRun) {
  TrainOptions options;
  options.strategy = "parameter_server";
  options.epochs = 3;
  auto decayed = MakeOptimizer(options, 100);
  ASSERT_TRUE(decayed.ok()) << decayed.status();
  ASSERT_NE((*decayed)->schedule(), nullptr);
  EXPECT_DOUBLE_EQ((*decayed)->schedule()->ValueAt(0), 1e-3);
  EXPECT_NEAR((*decayed)->schedule()->ValueAt(150), 0.55e-3, 1e-12);
  EXPECT_NEAR((*decayed)->schedule()->ValueAt(300), 1e-4, 1e-12);
  options.max_steps = 30;  // the run ends sooner: so does the decay
  EXPECT_NEAR(MakeOptimizer(options, 100).value()->schedule()->ValueAt(30), 1e-4, 1e-12);

  options.optimizer = "adam";
  EXPECT_EQ(MakeOptimizer(options, 100).value()->schedule(), nullptr);
  TrainOptions synchronous;
  EXPECT_EQ(MakeOptimizer(synchronous, 100).value()->schedule(), nullptr);
  // Asked for: the same decay on one device (to resume a parameter-server run's checkpoint).
  synchronous.optimizer = "adam";
  synchronous.lr_schedule = "cosine";
  synchronous.epochs = 1;
  auto one_device = MakeOptimizer(synchronous, 100);
  ASSERT_TRUE(one_device.ok()) << one_device.status();
  EXPECT_NEAR((*one_device)->schedule()->ValueAt(100), 1e-4, 1e-12);
  options.lr_schedule = "linear";
  EXPECT_THAT(MakeOptimizer(options, 100).status().message(),
              ::testing::HasSubstr("unknown learning-rate schedule 'linear'"));
  TrainOptions text;
  text.model = ModelKind::kCharTransformer;
  text.lr_schedule = "cosine";
  EXPECT_THAT(MakeOptimizer(text, 100).status().message(),
              ::testing::HasSubstr("W6's warmup and cosine schedule"));
}

}  // namespace
}  // namespace weft::train
