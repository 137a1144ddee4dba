// Model::Fit under MultiWorkerMirroredStrategy, in real processes: the test starts two copies of
// this binary as workers (WEFT_CONFIG on loopback ports, WEFT_MODEL_TEST_WORKER set), each of
// which trains the classifier of model_test_util.h with the code every other strategy runs, saves
// checkpoints (only the chief writes) and prints its predictions. Both workers must predict
// bitwise alike, and like two mirrored replicas of one process trained on the same global batches.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/io/durable_file.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/child_process.h"
#include "weft/testing/server_process.h"
#include "weft/train/testing/model_test_util.h"
#include "weft/train/testing/multi_worker_test_util.h"

namespace weft::train {
namespace {

constexpr char kWorkerVariable[] = "WEFT_MODEL_TEST_WORKER";
constexpr char kCheckpointVariable[] = "WEFT_MODEL_TEST_CHECKPOINT_DIR";
constexpr int64_t kExitMs = 180000;

// The worker's side: trains, then prints "predictions v0 v1 ..." and the checkpoints it saved.
int RunWorker() {
  StatusOr<std::unique_ptr<distribute::MultiWorkerMirroredStrategy>> strategy =
      testing::WorkerStrategyFromEnvironment();
  if (!strategy.ok()) {
    std::fprintf(stderr, "worker: %s\n", strategy.status().ToString().c_str());
    return 1;
  }
  const char* checkpoint_dir = std::getenv(kCheckpointVariable);
  ModelCheckpoint checkpoint(checkpoint_dir != nullptr ? checkpoint_dir : "",
                             {.save_every_steps = 4});
  std::vector<Callback*> callbacks;
  if (checkpoint_dir != nullptr) callbacks.push_back(&checkpoint);
  testing::TrainedClassifier trained = testing::TrainClassifier(strategy->get(), callbacks);
  if (!trained.status.ok()) {
    std::fprintf(stderr, "worker: %s\n", trained.status.ToString().c_str());
    return 1;
  }
  testing::PrintPredictions(trained.predictions);
  std::printf("saves %lld\n", static_cast<long long>(checkpoint.saves()));
  return 0;
}

TEST(ModelMultiWorkerTest, FitTrainsTwoWorkersAsTwoMirroredReplicasOfOneProcess) {
  io::testing::TempDir directory;
  std::vector<int> ports = {weft::testing::UnusedLoopbackPort(),
                            weft::testing::UnusedLoopbackPort()};
  std::vector<std::unique_ptr<weft::testing::ChildProcess>> workers;
  for (int task = 0; task < 2; ++task) {
    auto child = weft::testing::ChildProcess::Start(
        {"/proc/self/exe"}, {{"WEFT_CONFIG", weft::testing::LoopbackWorkerConfig(ports, task)},
                             {kWorkerVariable, "1"},
                             {kCheckpointVariable, directory.path()}});
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
  }
  EXPECT_EQ(predictions[0], predictions[1]);
  // The chief saved every 4 steps and at the end; the other worker saved nothing.
  EXPECT_THAT(workers[0]->output(), ::testing::HasSubstr("saves 3"));
  EXPECT_THAT(workers[1]->output(), ::testing::HasSubstr("saves 0"));
  EXPECT_TRUE(io::PathExists(directory.path() + "/checkpoint.json"));

  auto mirrored = testing::Mirrored(2);
  testing::TrainedClassifier in_process = testing::TrainClassifier(mirrored.get(), {});
  ASSERT_TRUE(in_process.status.ok()) << in_process.status;
  ASSERT_EQ(in_process.predictions.size(), predictions[0].size());
  for (size_t i = 0; i < predictions[0].size(); ++i) {
    EXPECT_NEAR(predictions[0][i], in_process.predictions[i], 1e-4) << "output " << i;
  }
}

}  // namespace
}  // namespace weft::train

int main(int argc, char** argv) {
  if (std::getenv(weft::train::kWorkerVariable) != nullptr) return weft::train::RunWorker();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
