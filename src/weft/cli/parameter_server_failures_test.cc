// Parameter-server training under `weft launch`, and the failures it survives: the real binary
// starts real `weft server` workers and ps tasks on loopback and `weft train --strategy
// parameter_server` as the chief, and a test kills a worker, a ps task or the chief with SIGKILL
// (or points the chief at a ps that does not answer). Checks that training goes on (or resumes)
// to the end, what the log and the --json summary say, and that no process is left behind.
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/cli/testing/launch_test_util.h"
#include "weft/core/str_util.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/child_process.h"
#include "weft/testing/server_process.h"

namespace weft::cli {
namespace {

using testing::FindStart;
using testing::Gone;
using ::testing::HasSubstr;
using testing::kWaitMs;
using testing::Launch;
using testing::LaunchArgs;
using testing::Start;
using testing::Starts;
using weft::testing::ChildProcess;

// Two epochs of W1 under `weft launch --workers 2 --ps 2 --restart-failed`, with `task`
// ("worker:1", "ps:0") killed with SIGKILL after the first step and waited for to be restarted.
void TrainAndKillAfterTheFirstStep(Launch& launch, const std::string& task) {
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: the first step finished").ok()) << launch.output();
  const Start killed = FindStart(launch.output(), "started", task);
  ASSERT_EQ(::kill(killed.pid, SIGKILL), 0);
  ASSERT_TRUE(launch.WaitFor(StrCat("weft launch: restarted ", task)).ok()) << launch.output();
}

std::vector<std::string> TrainWithRestarts(const std::string& flags = "") {
  return LaunchArgs(
      {"--workers", "2", "--ps", "2", "--restart-failed"},
      StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --epochs 2 --json", flags));
}

// The value of `"key":<number>` in the --json summary in `output`; -1 (and a failure) without it.
double SummaryNumber(const std::string& output, const std::string& key) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex(StrCat("\"", key, "\":(-?[0-9.]+)")))) {
    ADD_FAILURE() << "no " << key << " in:\n" << output;
    return -1;
  }
  return std::stod(match[1]);
}

// The same with --exactly-once: the killed worker's steps are discarded where they staged their
// updates and run again elsewhere, each committed once (visits counted per example in
// parameter_server_exactly_once_test.cc); the summary counts the input leased again.
TEST(ParameterServerFailuresTest, AKilledWorkersStepsAreAppliedOnceWithExactlyOnceInput) {
  Launch launch(TrainWithRestarts(" --exactly-once"));
  TrainAndKillAfterTheFirstStep(launch, "worker:0");
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_TRUE(
      launch.WaitFor("worker /job:worker/replica:0/task:0 is back: it takes steps again").ok())
      << launch.output();
  ASSERT_EQ(launch.Exit(/*wait_ms=*/300'000), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr("\"steps\":936")) << output;
  const double rescheduled = SummaryNumber(output, "rescheduled_steps");
  EXPECT_GE(rescheduled, 1);
  EXPECT_EQ(SummaryNumber(output, "input_shards_reissued"), rescheduled);
  EXPECT_EQ(SummaryNumber(output, "lost_commits"), 0);
  EXPECT_GT(SummaryNumber(output, "test_accuracy"), 0.75) << output;
  for (const Start& start : Starts(output)) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// A worker killed while training (SIGKILL) and brought back by --restart-failed: its step is
// rescheduled on the other worker, its session re-created once it answers, and the job ends well.
TEST(ParameterServerFailuresTest, ParameterServerTrainingSurvivesAKilledWorker) {
  Launch launch(TrainWithRestarts());
  TrainAndKillAfterTheFirstStep(launch, "worker:1");
  if (::testing::Test::HasFatalFailure()) return;
  const std::string name = "/job:worker/replica:0/task:1";
  ASSERT_TRUE(launch.WaitFor(StrCat("worker ", name, " is back: it takes steps again")).ok())
      << launch.output();
  // Two epochs of W1: seconds here, a minute or more under the sanitizers.
  ASSERT_EQ(launch.Exit(/*wait_ms=*/300'000), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr(StrCat("lost with worker ", name))) << output;
  EXPECT_THAT(output, HasSubstr("rescheduled on another"));
  EXPECT_THAT(output, HasSubstr("\"worker_recoveries\":1"));
  // Every step of both epochs ran, and the model learned.
  EXPECT_THAT(output, HasSubstr("\"steps\":936"));
  EXPECT_GT(SummaryNumber(output, "test_accuracy"), 0.75) << output;
  EXPECT_GE(SummaryNumber(output, "rescheduled_steps"), 1);
  for (const Start& start : Starts(output)) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// The same with --per-worker-dataset: each worker reads its shard of W1 from the IDX files itself;
// the restarted worker makes its dataset again before it takes steps, and the summary counts it.
TEST(ParameterServerFailuresTest, PerWorkerDatasetsAreMadeAgainOnARestartedWorker) {
  Launch launch(TrainWithRestarts(" --per-worker-dataset"));
  TrainAndKillAfterTheFirstStep(launch, "worker:1");
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_TRUE(launch
                  .WaitFor("/job:worker/replica:0/task:1 recovered: made its 1 per-worker "
                           "resource(s) again")
                  .ok())
      << launch.output();
  ASSERT_EQ(launch.Exit(/*wait_ms=*/300'000), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr("\"steps\":936")) << output;
  EXPECT_EQ(SummaryNumber(output, "per_worker_datasets_rebuilt"), 1);
  EXPECT_GT(SummaryNumber(output, "test_accuracy"), 0.75) << output;
  for (const Start& start : Starts(output)) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// A ps task killed while training (SIGKILL) and restarted empty by --restart-failed: the workers'
// steps on it are rescheduled, the first worker to reach it again restores its variables from
// the coordinator's snapshot, and training goes on to the end without a restart of the chief.
TEST(ParameterServerFailuresTest, ParameterServerTrainingSurvivesAKilledPs) {
  Launch launch(TrainWithRestarts());
  TrainAndKillAfterTheFirstStep(launch, "ps:0");
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_TRUE(
      launch.WaitFor("/job:ps/replica:0/task:0 restarted and lost its variables: restored").ok())
      << launch.output();
  ASSERT_EQ(launch.Exit(/*wait_ms=*/300'000), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr("\"ps_recoveries\":1")) << output;
  EXPECT_THAT(output, HasSubstr("\"steps\":936"));
  // At most the steps between two snapshots (every 100 steps), plus those in flight.
  EXPECT_LE(SummaryNumber(output, "steps_lost"), 110) << output;
  EXPECT_GT(SummaryNumber(output, "test_accuracy"), 0.75) << output;
  for (const Start& start : Starts(output)) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// A ps task killed after checkpoints newer than the coordinator's snapshot (a save every step,
// the snapshot every 100): its variables come back from the latest checkpoint, which each ps task
// wrote itself, and training goes on to the end.
TEST(ParameterServerFailuresTest, AKilledPsIsRestoredFromTheNewestCheckpoint) {
  io::testing::TempDir dir;
  const std::string checkpoints = dir.File("checkpoints");
  Launch launch(LaunchArgs(
      {"--workers", "2", "--ps", "2", "--restart-failed"},
      StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --epochs 1 --max-steps 150",
             " --json --checkpoint-dir ", checkpoints, " --save-every-steps 1")));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor(StrCat("saved checkpoint ", checkpoints, "/ckpt-3 ")).ok())
      << launch.output();
  const Start killed = FindStart(launch.output(), "started", "ps:1");
  ASSERT_EQ(::kill(killed.pid, SIGKILL), 0);
  ASSERT_TRUE(launch.WaitFor("weft launch: restarted ps:1").ok()) << launch.output();
  ASSERT_TRUE(launch
                  .WaitFor(StrCat("/job:ps/replica:0/task:1 restarted and lost its variables: ",
                                  "restored "))
                  .ok())
      << launch.output();
  ASSERT_EQ(launch.Exit(/*wait_ms=*/300'000), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr(StrCat("from the checkpoint ", checkpoints, "/ckpt-"))) << output;
  EXPECT_THAT(output, HasSubstr("(newer than the snapshot of step 0)")) << output;
  EXPECT_THAT(output, HasSubstr("\"ps_recoveries\":1")) << output;
  EXPECT_THAT(output, HasSubstr("\"steps\":150"));
  // A save every step: at most the steps in flight are lost.
  EXPECT_LE(SummaryNumber(output, "steps_lost"), 10) << output;
  for (const Start& start : Starts(output)) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// The chief killed (SIGKILL) after a checkpoint: the launch stops every server, and running the
// same command again resumes from the checkpoint and trains to the end.
TEST(ParameterServerFailuresTest, ParameterServerChiefKilledAndRunAgainResumesFromItsCheckpoint) {
  io::testing::TempDir dir;
  const std::vector<std::string> argv = LaunchArgs(
      {"--workers", "2", "--ps", "2"},
      StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --epochs 2 --json ",
             "--checkpoint-dir ", dir.File("checkpoints"), " --save-every-steps 50"));
  {
    Launch first(argv);
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(first.WaitFor("weft train: saved checkpoint ").ok()) << first.output();
    const Start chief = FindStart(first.output(), "started", "chief:0");
    ASSERT_EQ(::kill(chief.pid, SIGKILL), 0);
    EXPECT_NE(first.Exit(), 0) << first.output();
    for (const Start& start : Starts(first.output())) {
      EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
    }
  }
  Launch again(argv);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again.Exit(/*wait_ms=*/300'000), 0) << again.output();
  const std::string output = again.output();
  const double resumed = SummaryNumber(output, "resumed_from_step");
  EXPECT_GE(resumed, 50) << output;
  EXPECT_EQ(static_cast<int64_t>(resumed) % 50, 0) << output;
  EXPECT_THAT(output, HasSubstr("\"steps\":936"));
}

// A checkpoint written by 2 ps tasks (each its own shard file) restores onto 3 ps tasks, which
// write 3 shards, and then onto one device: the variables go wherever the new placement puts
// them, by name.
TEST(ParameterServerFailuresTest, ParameterServerCheckpointsRestoreOnMorePsTasksAndOnOneDevice) {
  io::testing::TempDir dir;
  const std::string checkpoints = dir.File("checkpoints");
  auto train = [&](int ps, int steps) {
    return LaunchArgs({"--workers", "2", "--ps", StrCat(ps)},
                      StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --json ",
                             "--epochs 1 --max-steps ", steps, " --checkpoint-dir ", checkpoints));
  };
  {
    Launch on_two(train(2, 60));
    ASSERT_TRUE(on_two.ok());
    ASSERT_EQ(on_two.Exit(/*wait_ms=*/120'000), 0) << on_two.output();
  }
  EXPECT_TRUE(
      std::filesystem::exists(StrCat(checkpoints, "/ckpt-60/shard-00001-of-00002.safetensors")));
  {
    Launch on_three(train(3, 120));
    ASSERT_TRUE(on_three.ok());
    ASSERT_EQ(on_three.Exit(/*wait_ms=*/120'000), 0) << on_three.output();
    EXPECT_THAT(on_three.output(), HasSubstr("\"resumed_from_step\":60")) << on_three.output();
    EXPECT_THAT(on_three.output(), HasSubstr("\"steps\":120"));
  }
  EXPECT_TRUE(
      std::filesystem::exists(StrCat(checkpoints, "/ckpt-120/shard-00002-of-00003.safetensors")));
  // The same optimizer as the ps runs' default (Adam, decayed by a cosine), whose slots the
  // checkpoint holds.
  Launch on_one({WEFT_BINARY, "train", "--json", "--epochs", "1", "--max-steps", "130",
                 "--optimizer", "adam", "--lr-schedule", "cosine", "--checkpoint-dir",
                 checkpoints});
  ASSERT_TRUE(on_one.ok());
  ASSERT_EQ(on_one.Exit(/*wait_ms=*/120'000), 0) << on_one.output();
  EXPECT_THAT(on_one.output(), HasSubstr("\"resumed_from_step\":120")) << on_one.output();
}

// A cluster whose ps task does not answer: the chief's error names the ps task and its address,
// within the worker timeout, and nothing is left running.
TEST(ParameterServerFailuresTest, ParameterServerTrainingNamesAPsTaskThatDoesNotAnswer) {
  const std::string ps = StrCat("127.0.0.1:", weft::testing::UnusedLoopbackPort());
  auto worker = ChildProcess::Start(
      {WEFT_BINARY, "server", "--cluster", "worker=127.0.0.1:0", "--task", "0"});
  ASSERT_TRUE(worker.ok()) << worker.status();
  ASSERT_TRUE((*worker)->WaitForOutput("weft server listening on ", kWaitMs).ok());
  const std::string output = (*worker)->output();
  const size_t at = output.find("listening on ") + std::string("listening on ").size();
  const std::string worker_address = output.substr(at, output.find('\n', at) - at);
  const std::string config =
      StrCat(R"({"cluster": {"chief": ["127.0.0.1:0"], "worker": [")", worker_address,
             R"("], "ps": [")", ps, R"("]}, "task": {"type": "chief", "index": 0}})");
  auto chief = ChildProcess::Start({WEFT_BINARY, "train", "--strategy", "parameter_server",
                                    "--max-steps", "1", "--worker-timeout-ms", "2000"},
                                   {{"WEFT_CONFIG", config}});
  ASSERT_TRUE(chief.ok()) << chief.status();
  StatusOr<int> code = (*chief)->WaitForExit(kWaitMs);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 1) << (*chief)->output();
  EXPECT_THAT((*chief)->output(), HasSubstr(StrCat("/job:ps/replica:0/task:0 at ", ps)))
      << (*chief)->output();
  EXPECT_THAT((*chief)->output(), HasSubstr("2000 ms")) << (*chief)->output();
  (*worker)->Signal(SIGTERM);
  EXPECT_TRUE((*worker)->WaitForExit(kWaitMs).ok());
}

}  // namespace
}  // namespace weft::cli
