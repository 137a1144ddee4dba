// Clipping by global norm under MultiWorkerMirroredStrategy, in real processes: the test starts two
// copies of this binary as workers (WEFT_CONFIG on loopback ports, WEFT_CLIP_TEST_WORKER naming
// the optimizer), each of which fits the classifier of optimizer_test_util.h with a clip norm that
// every step exceeds (momentum; and AdamW with a warmup-cosine schedule, as W6 trains) and prints
// its predictions and step count. Both workers must predict bitwise alike, and like one device
// trained on the same global batches: the norm is the reduced gradients', not each worker's.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/testing/child_process.h"
#include "weft/testing/server_process.h"
#include "weft/train/testing/multi_worker_test_util.h"
#include "weft/train/testing/optimizer_test_util.h"

namespace weft::train {
namespace {

constexpr char kWorkerVariable[] = "WEFT_CLIP_TEST_WORKER";
constexpr int64_t kExitMs = 180000;

testing::OptimizerConfig ConfigNamed(const std::string& name) {
  if (name == "momentum") return {.adamw = false, .clip_norm = 0.05};
  return {.adamw = true, .clip_norm = 0.05, .schedule = true};
}

// The worker's side: fits, then prints "predictions v0 v1 ..." and "iterations N".
int RunWorker(const std::string& config) {
  StatusOr<std::unique_ptr<distribute::MultiWorkerMirroredStrategy>> strategy =
      testing::WorkerStrategyFromEnvironment();
  if (!strategy.ok()) {
    std::fprintf(stderr, "worker: %s\n", strategy.status().ToString().c_str());
    return 1;
  }
  testing::FitResult fitted = testing::FitClassifier(strategy->get(), ConfigNamed(config));
  if (!fitted.status.ok()) {
    std::fprintf(stderr, "worker: %s\n", fitted.status.ToString().c_str());
    return 1;
  }
  testing::PrintPredictions(fitted.predictions);
  std::printf("iterations");
  for (const Tensor& count : fitted.iterations) {
    std::printf(" %lld", static_cast<long long>(*count.data<int64_t>()));
  }
  std::printf("\n");
  return 0;
}

void ExpectTwoWorkersLikeOneDevice(const std::string& config) {
  SCOPED_TRACE(config);
  std::vector<int> ports = {weft::testing::UnusedLoopbackPort(),
                            weft::testing::UnusedLoopbackPort()};
  std::vector<std::unique_ptr<weft::testing::ChildProcess>> workers;
  for (int task = 0; task < 2; ++task) {
    auto child = weft::testing::ChildProcess::Start(
        {"/proc/self/exe"}, {{"WEFT_CONFIG", weft::testing::LoopbackWorkerConfig(ports, task)},
                             {kWorkerVariable, config}});
    ASSERT_TRUE(child.ok()) << child.status();
    workers.push_back(std::move(child).value());
  }
  std::vector<std::vector<float>> predictions;
  for (int task = 0; task < 2; ++task) {
    StatusOr<int> code = workers[task]->WaitForExit(kExitMs);
    ASSERT_TRUE(code.ok()) << code.status();
    ASSERT_EQ(*code, 0) << "worker " << task << ":\n" << workers[task]->output();
    predictions.push_back(testing::PredictionsIn(workers[task]->output()));
    ASSERT_FALSE(predictions.back().empty()) << workers[task]->output();
    if (ConfigNamed(config).schedule) {
      EXPECT_THAT(workers[task]->output(), ::testing::HasSubstr("iterations 20\n"));
    }
  }
  EXPECT_EQ(predictions[0], predictions[1]);

  testing::FitResult one_device = testing::FitClassifier(nullptr, ConfigNamed(config));
  ASSERT_TRUE(one_device.status.ok()) << one_device.status;
  ASSERT_EQ(one_device.predictions.size(), predictions[0].size());
  for (size_t i = 0; i < predictions[0].size(); ++i) {
    EXPECT_NEAR(predictions[0][i], one_device.predictions[i], 1e-4) << "output " << i;
  }
}

TEST(ClipMultiWorkerTest, TwoWorkersClipMomentumGradientsLikeOneDevice) {
  ExpectTwoWorkersLikeOneDevice("momentum");
}

TEST(ClipMultiWorkerTest, TwoWorkersTrainAdamWWithScheduleAndClipLikeOneDevice) {
  ExpectTwoWorkersLikeOneDevice("w6");
}

}  // namespace
}  // namespace weft::train

int main(int argc, char** argv) {
  if (const char* config = std::getenv(weft::train::kWorkerVariable)) {
    return weft::train::RunWorker(config);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
