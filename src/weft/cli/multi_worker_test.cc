// Multi-worker training end to end: real `weft train --strategy multi_worker_mirrored` processes
// on loopback (WEFT_CONFIG on ephemeral ports, or `weft launch`), each torn down by its
// ChildProcess even when a test fails. Checks that every worker ends with bitwise the same weights
// (shared memory, TCP forced, two devices per worker, eight oversubscribed workers), that the same
// seed gives the same loss twice, that a killed worker fails the others within 10 s naming it, and
// that a worker that never starts is named once the group's deadline passes; and that the chief's
// checkpoints resume a killed job, restored on every worker.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "weft/cli/testing/multi_worker_test_util.h"
#include "weft/core/str_util.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/child_process.h"
#include "weft/testing/server_process.h"

namespace weft::cli {
namespace {

using ::testing::HasSubstr;
using testing::StartWorkers;
using testing::TrainArgs;
using weft::testing::ChildProcess;

constexpr int64_t kExitMs = 240000;

// The fingerprint a worker printed: the chief's JSON field or the others' summary line.
std::string FingerprintOf(const std::string& output) {
  const std::string marker = "variables ";
  size_t at = output.rfind(marker);
  if (at != std::string::npos) return output.substr(at + marker.size(), 16);
  at = output.rfind("\"variables_fingerprint\":\"");
  if (at == std::string::npos) return "none";
  return output.substr(at + 25, 16);
}

// Runs a job to its end and expects every worker to finish with the chief's weights.
void ExpectIdenticalWorkers(const std::vector<std::unique_ptr<ChildProcess>>& children) {
  ASSERT_FALSE(children.empty());
  std::vector<std::string> fingerprints;
  for (auto& child : children) {
    StatusOr<int> code = child->WaitForExit(kExitMs);
    ASSERT_TRUE(code.ok()) << code.status() << "\n" << child->output();
    ASSERT_EQ(*code, 0) << child->output();
    fingerprints.push_back(FingerprintOf(child->output()));
  }
  EXPECT_THAT(children[0]->output(), HasSubstr(StrCat("\"workers\":", children.size())));
  for (size_t t = 1; t < children.size(); ++t) {
    EXPECT_THAT(children[t]->output(), HasSubstr(StrCat("worker ", t, " of ", children.size())));
    EXPECT_EQ(fingerprints[t], fingerprints[0]) << "worker " << t << "\n" << children[t]->output();
  }
  EXPECT_NE(fingerprints[0], "none") << children[0]->output();
}

TEST(MultiWorkerTest, TwoWorkersOverSharedMemoryEndIdentical) {
  ExpectIdenticalWorkers(StartWorkers(2, {"--max-steps", "30", "--json"}));
}

TEST(MultiWorkerTest, TwoWorkersOverTcpWithTwoDevicesEachEndIdentical) {
  ExpectIdenticalWorkers(
      StartWorkers(2, {"--max-steps", "20", "--devices", "2", "--force-tcp", "--json"}));
}

TEST(MultiWorkerTest, FourWorkersOnTwoPretendHostsEndIdentical) {
  // WEFT_HOST a, b, a, b: shared memory inside each "host", TCP between their leaders.
  const std::vector<int> ports = weft::testing::UnusedLoopbackPorts(4);
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int t = 0; t < 4; ++t) {
    auto child =
        ChildProcess::Start(TrainArgs({"--max-steps", "10", "--json"}),
                            {{"WEFT_CONFIG", weft::testing::LoopbackWorkerConfig(ports, t)},
                             {"WEFT_HOST", t % 2 == 0 ? "host-a" : "host-b"}});
    ASSERT_TRUE(child.ok()) << child.status();
    children.push_back(std::move(child).value());
  }
  ExpectIdenticalWorkers(children);
  EXPECT_THAT(children[0]->output(),
              HasSubstr("\"collective_transport\":\"shared memory in each host, TCP"));
}

TEST(MultiWorkerTest, EightOversubscribedWorkersEndIdentical) {
  ExpectIdenticalWorkers(StartWorkers(8, {"--max-steps", "5", "--batch-size", "64", "--json"}));
}

TEST(MultiWorkerTest, DifferentSeedsStillStartFromTheChiefsWeights) {
  // Each worker draws its own initial values; the broadcast from the chief makes them agree.
  std::vector<int> ports = {weft::testing::UnusedLoopbackPort(),
                            weft::testing::UnusedLoopbackPort()};
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int t = 0; t < 2; ++t) {
    auto child = ChildProcess::Start(
        TrainArgs({"--max-steps", "10", "--json", "--seed", std::to_string(100 + t)}),
        {{"WEFT_CONFIG", weft::testing::LoopbackWorkerConfig(ports, t)}});
    ASSERT_TRUE(child.ok()) << child.status();
    children.push_back(std::move(child).value());
  }
  ExpectIdenticalWorkers(children);
}

TEST(MultiWorkerTest, TfConfigStartsTheJobUnchanged) {
  // The reference's JSON as a Kubernetes training operator writes it: a chief and a worker.
  const int chief = weft::testing::UnusedLoopbackPort();
  const int worker = weft::testing::UnusedLoopbackPort();
  const std::string cluster = StrCat(R"("cluster": {"chief": ["127.0.0.1:)", chief,
                                     R"("], "worker": ["127.0.0.1:)", worker, R"("]})");
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (const char* task :
       {R"("task": {"type": "chief", "index": 0})", R"("task": {"type": "worker", "index": 0})"}) {
    auto child = ChildProcess::Start(TrainArgs({"--max-steps", "10", "--json"}),
                                     {{"TF_CONFIG", StrCat("{", cluster, ", ", task, "}")}});
    ASSERT_TRUE(child.ok()) << child.status();
    children.push_back(std::move(child).value());
  }
  ExpectIdenticalWorkers(children);
}

TEST(MultiWorkerTest, SameSeedGivesTheSameLossTwice) {
  std::vector<std::string> losses;
  for (int run = 0; run < 2; ++run) {
    auto children = StartWorkers(2, {"--max-steps", "20", "--json"});
    ASSERT_EQ(children.size(), 2u);
    for (auto& child : children) {
      StatusOr<int> code = child->WaitForExit(kExitMs);
      ASSERT_TRUE(code.ok()) << code.status();
      ASSERT_EQ(*code, 0) << child->output();
    }
    const std::string& out = children[0]->output();
    const size_t at = out.find("\"final_loss\":");
    ASSERT_NE(at, std::string::npos) << out;
    losses.push_back(out.substr(at, out.find(',', at) - at));
  }
  EXPECT_EQ(losses[0], losses[1]);
}

TEST(MultiWorkerTest, AKilledWorkerFailsTheOthersWithinTenSecondsNamingIt) {
  auto children = StartWorkers(2, {"--epochs", "50"});
  ASSERT_EQ(children.size(), 2u);
  ASSERT_TRUE(children[0]->WaitForOutput("took its first step", 120000).ok())
      << children[0]->output();
  children[1]->Signal(SIGKILL);
  StatusOr<int> code = children[0]->WaitForExit(10000);
  ASSERT_TRUE(code.ok()) << "the chief did not fail within 10 s\n" << children[0]->output();
  EXPECT_NE(*code, 0);
  EXPECT_THAT(children[0]->output(), HasSubstr("task:1"));
}

TEST(MultiWorkerTest, AHungWorkerIsFoundByTheHeartbeatWithinTenSeconds) {
  // A stopped process keeps its sockets and its shared memory: only the heartbeat can tell.
  auto children = StartWorkers(2, {"--epochs", "50"});
  ASSERT_EQ(children.size(), 2u);
  ASSERT_TRUE(children[0]->WaitForOutput("took its first step", 120000).ok())
      << children[0]->output();
  children[1]->Signal(SIGSTOP);
  StatusOr<int> code = children[0]->WaitForExit(10000);
  children[1]->Signal(SIGKILL);
  ASSERT_TRUE(code.ok()) << "the chief did not fail within 10 s\n" << children[0]->output();
  EXPECT_NE(*code, 0);
  EXPECT_THAT(children[0]->output(), HasSubstr("task:1 stopped answering the heartbeat"));
}

TEST(MultiWorkerTest, AWorkerThatNeverStartsIsNamed) {
  auto children =
      StartWorkers(2, {"--max-steps", "5", "--collective-timeout-ms", "3000"}, /*started=*/1);
  ASSERT_EQ(children.size(), 1u);
  StatusOr<int> code = children[0]->WaitForExit(60000);
  ASSERT_TRUE(code.ok()) << code.status() << "\n" << children[0]->output();
  EXPECT_NE(*code, 0);
  EXPECT_THAT(children[0]->output(), HasSubstr("task:1"));
  EXPECT_THAT(children[0]->output(), HasSubstr("did not form"));
}

TEST(MultiWorkerTest, WeftLaunchRunsTheJob) {
  auto launch = ChildProcess::Start({WEFT_BINARY, "launch", "--workers", "2", "--", WEFT_BINARY,
                                     "train", "--strategy", "multi_worker_mirrored", "--model",
                                     "mlp", "--epochs", "1", "--max-steps", "10", "--json"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  StatusOr<int> code = (*launch)->WaitForExit(kExitMs);
  ASSERT_TRUE(code.ok()) << code.status() << "\n" << (*launch)->output();
  EXPECT_EQ(*code, 0) << (*launch)->output();
  EXPECT_THAT((*launch)->output(), HasSubstr("\"workers\":2"));
  EXPECT_THAT((*launch)->output(), HasSubstr("worker 1 of 2 done"));
}

// The pids of `parent`'s children (the workers `weft launch` started), from /proc.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  std::ifstream list(StrCat("/proc/", parent, "/task/", parent, "/children"));
  for (pid_t pid = 0; list >> pid;) children.push_back(pid);
  return children;
}

int64_t ResumedFromStep(const std::string& output) {
  const std::string marker = "\"resumed_from_step\":";
  const size_t at = output.rfind(marker);
  return at == std::string::npos ? -2 : std::atoll(output.c_str() + at + marker.size());
}

// The chief saves; after a worker is killed the job fails, and the same `weft launch` command
// resumes it from the last checkpoint, every worker restoring it, and finishes it.
TEST(MultiWorkerTest, AKilledJobResumesFromItsLastCheckpointUnderWeftLaunch) {
  io::testing::TempDir dir;
  const std::vector<std::string> command = {WEFT_BINARY,
                                            "launch",
                                            "--workers",
                                            "2",
                                            "--",
                                            WEFT_BINARY,
                                            "train",
                                            "--strategy",
                                            "multi_worker_mirrored",
                                            "--model",
                                            "mlp",
                                            "--epochs",
                                            "1",
                                            "--max-steps",
                                            "400",
                                            "--checkpoint-dir",
                                            dir.path(),
                                            "--save-every-steps",
                                            "20",
                                            "--json"};
  auto first = ChildProcess::Start(command);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE((*first)->WaitForOutput("saved checkpoint", kExitMs).ok()) << (*first)->output();
  const std::vector<pid_t> workers = ChildrenOf((*first)->pid());
  ASSERT_EQ(workers.size(), 2u) << (*first)->output();
  kill(workers[1], SIGKILL);
  StatusOr<int> code = (*first)->WaitForExit(60000);
  ASSERT_TRUE(code.ok()) << code.status() << "\n" << (*first)->output();
  EXPECT_NE(*code, 0) << (*first)->output();

  auto second = ChildProcess::Start(command);
  ASSERT_TRUE(second.ok()) << second.status();
  code = (*second)->WaitForExit(kExitMs);
  ASSERT_TRUE(code.ok()) << code.status() << "\n" << (*second)->output();
  ASSERT_EQ(*code, 0) << (*second)->output();
  const std::string& output = (*second)->output();
  EXPECT_THAT(output, HasSubstr("resumed from checkpoint"));
  const int64_t resumed = ResumedFromStep(output);
  EXPECT_GE(resumed, 20) << output;
  EXPECT_EQ(resumed % 20, 0) << output;
  EXPECT_THAT(output, HasSubstr("\"steps\":400"));
  EXPECT_THAT(output, HasSubstr("worker 1 of 2 done: 400 steps"));
}

// A checkpoint written by one process on one device restores into two workers.
TEST(MultiWorkerTest, AOneDeviceCheckpointResumesOnTwoWorkers) {
  io::testing::TempDir dir;
  auto single =
      ChildProcess::Start({WEFT_BINARY, "train", "--model", "mlp", "--epochs", "1", "--max-steps",
                           "10", "--threads", "1", "--checkpoint-dir", dir.path()});
  ASSERT_TRUE(single.ok()) << single.status();
  StatusOr<int> code = (*single)->WaitForExit(kExitMs);
  ASSERT_TRUE(code.ok() && *code == 0) << (*single)->output();
  auto children = StartWorkers(2, {"--max-steps", "20", "--json", "--checkpoint-dir", dir.path()});
  ExpectIdenticalWorkers(children);
  ASSERT_EQ(children.size(), 2u);
  EXPECT_EQ(ResumedFromStep(children[0]->output()), 10) << children[0]->output();
  EXPECT_THAT(children[1]->output(), HasSubstr("resumed from checkpoint"));
}

}  // namespace
}  // namespace weft::cli
