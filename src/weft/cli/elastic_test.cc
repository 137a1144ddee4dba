// Elastic multi-worker training end to end: `weft launch --elastic` starts real `weft train`
// workers on loopback, a test kills some of them with SIGKILL (during training, while they start,
// while a restarted one joins, two at once), and checks that the others train on to the end
// without a restart: the launch exits 0, every survivor reports the same steps, the same trained
// variables and the membership changes, a restarted worker receives the state from a peer, and
// no process is left. Also --min-workers reached and the flag errors.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "weft/cli/testing/launch_test_util.h"
#include "weft/core/str_util.h"

namespace weft::cli {
namespace {

using testing::FindStart;
using testing::Gone;
using ::testing::HasSubstr;
using testing::Launch;
using ::testing::Not;
using testing::Start;
using testing::Starts;

// Under a sanitizer a step is 5-20 times slower and ctest runs other tests beside these: the jobs
// are shorter there, and the waits longer.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WEFT_ELASTIC_TEST_SANITIZED 1
#endif
#endif
#ifdef WEFT_ELASTIC_TEST_SANITIZED
constexpr int64_t kStepsPerEpoch = 150;  // of the 500 an epoch has
constexpr double kMinAccuracy = 0.6;
#else
constexpr int64_t kStepsPerEpoch = 500;
constexpr double kMinAccuracy = 0.75;
#endif
// How long a test waits for the workers to start, step or join.
constexpr int64_t kProgressMs = 180'000;

// W1 for `epochs` epochs of 120-example global batches (500 steps each, or kStepsPerEpoch; 120
// splits over 1 to 6 workers).
std::vector<std::string> ElasticLaunch(int workers, const std::vector<std::string>& launch_flags,
                                       int epochs = 1) {
  std::vector<std::string> argv = {WEFT_BINARY, "launch", "--workers", std::to_string(workers),
                                   "--elastic"};
  argv.insert(argv.end(), launch_flags.begin(), launch_flags.end());
  argv.insert(argv.end(),
              {"--", WEFT_BINARY, "train", "--strategy", "multi_worker_mirrored", "--model", "mlp",
               "--epochs", std::to_string(epochs), "--batch-size", "120", "--json"});
  if (kStepsPerEpoch != 500) {
    argv.insert(argv.end(), {"--max-steps", std::to_string(kStepsPerEpoch * epochs)});
  }
  return argv;
}

// Every worker's --json summary, by its launch index (a restarted worker's last one).
std::map<int, nlohmann::json> Summaries(const std::string& output) {
  std::map<int, nlohmann::json> summaries;
  // Parsed by hand: std::regex recurses once per character, and a summary line is kilobytes long
  // (a stack overflow under AddressSanitizer).
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    constexpr std::string_view kPrefix = "[worker ";
    const size_t close = line.find("] {");
    if (line.rfind(kPrefix, 0) != 0 || close == std::string::npos || line.back() != '}') continue;
    nlohmann::json json = nlohmann::json::parse(line.substr(close + 2), nullptr, false);
    if (!json.is_discarded()) {
      summaries[std::stoi(line.substr(kPrefix.size(), close - kPrefix.size()))] = std::move(json);
    }
  }
  return summaries;
}

// The number after `text` on the first line of `output` that holds both `start` and then `text`
// (-1 when there is none).
int64_t NumberAfter(const std::string& output, const std::string& start, const std::string& text) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find(start);
    if (at == std::string::npos) continue;
    const size_t number = line.find(text, at);
    if (number != std::string::npos) return std::atoll(line.c_str() + number + text.size());
  }
  return -1;
}

// The launch's exit after training; generous for the sanitizer builds.
constexpr int64_t kTrainingMs = 300'000;

void Kill(const Launch& launch, const std::string& task, const std::string& verb = "started") {
  const Start start = FindStart(launch.output(), verb, task);
  ASSERT_GT(start.pid, 0);
  ASSERT_EQ(::kill(start.pid, SIGKILL), 0);
}

// The survivors (and joiners) finished the whole epoch from the same state to the same variables.
void ExpectTrainedTogether(const std::map<int, nlohmann::json>& summaries, size_t workers,
                           int64_t min_changes) {
  ASSERT_EQ(summaries.size(), workers);
  const nlohmann::json& first = summaries.begin()->second;
  for (const auto& [worker, summary] : summaries) {
    SCOPED_TRACE(StrCat("worker ", worker));
    EXPECT_EQ(summary["steps"], kStepsPerEpoch);
    EXPECT_EQ(summary["variables_fingerprint"], first["variables_fingerprint"]);
    EXPECT_GE(summary["membership_changes"].get<int64_t>(), min_changes);
    EXPECT_GT(summary["test_accuracy"].get<double>(), kMinAccuracy);
    EXPECT_LE(summary["elastic_recovery_seconds"].get<double>(), 30.0);
  }
}

// Exactly-once visitation: every global step (the same global batch on every worker: the epoch's
// order is seeded) is completed once. Each generation continues after the most advanced member's
// last completed step, so no step is skipped, and a step completed by some member is not run
// again; with 500 steps in all (checked by ExpectTrainedTogether), each batch was trained once.
void ExpectEachStepOnce(const std::string& output, int64_t generation) {
  int64_t ended = -1;
  const std::regex ended_line(
      StrCat(R"(elastic: generation )", generation - 1, R"( ended after step (\d+))"));
  for (auto it = std::sregex_iterator(output.begin(), output.end(), ended_line);
       it != std::sregex_iterator(); ++it) {
    ended = std::max<int64_t>(ended, std::stoll((*it)[1]));
  }
  ASSERT_GE(ended, 1) << output;
  EXPECT_EQ(NumberAfter(output, StrCat("elastic: generation ", generation, ": "),
                        "continuing after step "),
            ended)
      << output;
}

void ExpectNoneLeft(const std::string& output) {
  for (const Start& start : Starts(output)) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

TEST(ElasticTest, TheOthersTrainOnAfterAWorkerIsKilledMidTraining) {
  Launch launch(ElasticLaunch(3, {}));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: worker 1 of 3 took its first step", 0, kProgressMs).ok())
      << launch.output();
  Kill(launch, "worker:1");
  ASSERT_EQ(launch.Exit(kTrainingMs), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr("weft launch: worker:1 (pid"));
  EXPECT_THAT(output, HasSubstr("lost: signal 9 (Killed); the others go on"));
  EXPECT_THAT(output, HasSubstr("generation 2: 2 worker(s) (launch workers 0, 2)"));
  ExpectEachStepOnce(output, 2);
  const std::map<int, nlohmann::json> summaries = Summaries(output);
  ExpectTrainedTogether(summaries, 2, 1);
  for (const auto& [worker, summary] : summaries) {
    EXPECT_LE(summary["steps_recomputed"].get<int64_t>(), 2) << worker;
    EXPECT_EQ(summary["workers"], 2);
  }
  ExpectNoneLeft(output);
}

TEST(ElasticTest, AWorkerKilledWhileStartingIsLeftOutOfTheFirstGeneration) {
  Launch launch(ElasticLaunch(3, {}));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft launch: started worker:2 pid", 0, kProgressMs).ok())
      << launch.output();
  // Worker 2 is still loading its input when it dies.
  Kill(launch, "worker:2");
  ASSERT_EQ(launch.Exit(kTrainingMs), 0) << launch.output();
  const std::map<int, nlohmann::json> summaries = Summaries(launch.output());
  ExpectTrainedTogether(summaries, 2, 0);
  ExpectNoneLeft(launch.output());
}

TEST(ElasticTest, ARestartedWorkerJoinsAndReceivesTheStateFromAPeer) {
  Launch launch(ElasticLaunch(3, {"--restart-failed"}));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: worker 2 of 3 took its first step", 0, kProgressMs).ok())
      << launch.output();
  Kill(launch, "worker:2");
  ASSERT_EQ(launch.Exit(kTrainingMs), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr("(restart 1)"));
  EXPECT_THAT(output, HasSubstr("launch workers 0, 1, 2), this one rank 2; continuing"));
  const std::map<int, nlohmann::json> summaries = Summaries(output);
  // Left, then joined again: two changes; the joiner healed from rank 0 over the collectives.
  ExpectTrainedTogether(summaries, 3, 2);
  EXPECT_GT(summaries.at(2)["elastic_heal_seconds"].get<double>(), 0);
  EXPECT_EQ(summaries.at(2)["generations"], 1);
  ExpectNoneLeft(output);
}

TEST(ElasticTest, AWorkerKilledWhileItJoinsIsStartedAgain) {
  Launch launch(ElasticLaunch(3, {"--restart-failed"}));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: worker 1 of 3 took its first step", 0, kProgressMs).ok())
      << launch.output();
  Kill(launch, "worker:1");
  ASSERT_TRUE(launch.WaitFor("(restart 1)", 0, kProgressMs).ok()) << launch.output();
  // Killed again before it could join (its first restart): the second restart joins.
  for (const Start& start : Starts(launch.output())) {
    if (start.task == "worker:1" && Starts(launch.output()).back().pid == start.pid) {
      ASSERT_EQ(::kill(start.pid, SIGKILL), 0);
    }
  }
  ASSERT_EQ(launch.Exit(kTrainingMs), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr("(restart 2)"));
  ExpectTrainedTogether(Summaries(output), 3, 2);
  ExpectNoneLeft(output);
}

TEST(ElasticTest, TwoWorkersLostAtOnce) {
  Launch launch(ElasticLaunch(4, {}));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: worker 3 of 4 took its first step", 0, kProgressMs).ok())
      << launch.output();
  Kill(launch, "worker:1");
  Kill(launch, "worker:3");
  ASSERT_EQ(launch.Exit(kTrainingMs), 0) << launch.output();
  const std::map<int, nlohmann::json> summaries = Summaries(launch.output());
  ExpectTrainedTogether(summaries, 2, 1);
  for (const auto& [worker, summary] : summaries) EXPECT_EQ(summary["workers"], 2) << worker;
  ExpectNoneLeft(launch.output());
}

// A worker that stops answering (SIGSTOP) without exiting: the others' heartbeat fails their step
// within seconds, they ask to re-form, and the membership evicts the silent member once it has not
// come to the step boundary in time (the launch kills it); the others then train on.
TEST(ElasticTest, AStoppedWorkerIsEvictedAndTheOthersTrainOn) {
  Launch launch(ElasticLaunch(3, {}));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: worker 2 of 3 took its first step", 0, kProgressMs).ok())
      << launch.output();
  const Start stopped = FindStart(launch.output(), "started", "worker:2");
  ASSERT_EQ(::kill(stopped.pid, SIGSTOP), 0);
  ASSERT_EQ(launch.Exit(kTrainingMs), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr("worker:2 did not come to the step boundary in time"));
  EXPECT_THAT(output, HasSubstr("generation 2: 2 worker(s) (launch workers 0, 1)"));
  ExpectEachStepOnce(output, 2);
  ExpectTrainedTogether(Summaries(output), 2, 1);
  ExpectNoneLeft(output);
}

// The chaos test: 4 workers with --restart-failed, three kills of different workers, each once
// the previous one's replacement has joined and trained; the job ends well with all 4, having
// seen three leaves and three joins.
TEST(ElasticTest, ChaosThreeKillsWithRestarts) {
  Launch launch(ElasticLaunch(4, {"--restart-failed"}, /*epochs=*/2));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: worker 3 of 4 took its first step", 0, kProgressMs).ok())
      << launch.output();
  for (int worker : {2, 0, 3}) {
    const size_t from = launch.output().size();
    Kill(launch, StrCat("worker:", worker));
    if (::testing::Test::HasFatalFailure()) return;
    // Its replacement has joined: a generation formed with it.
    ASSERT_TRUE(launch
                    .WaitFor(StrCat("[worker ", worker, "] weft train: elastic: generation"), from,
                             kProgressMs)
                    .ok())
        << launch.output();
  }
  ASSERT_EQ(launch.Exit(kTrainingMs), 0) << launch.output();
  const std::map<int, nlohmann::json> summaries = Summaries(launch.output());
  ASSERT_EQ(summaries.size(), 4u) << launch.output();
  for (const auto& [worker, summary] : summaries) {
    EXPECT_EQ(summary["steps"], 2 * kStepsPerEpoch) << worker;
    EXPECT_EQ(summary["variables_fingerprint"], summaries.begin()->second["variables_fingerprint"]);
    EXPECT_GT(summary["test_accuracy"].get<double>(), kMinAccuracy);
  }
  // Worker 1 was never killed: it saw every change.
  EXPECT_GE(summaries.at(1)["membership_changes"].get<int64_t>(), 6);
  EXPECT_LE(summaries.at(1)["steps_recomputed"].get<int64_t>(), 6);
  ExpectNoneLeft(launch.output());
}

// A job that loses more workers than it can continue with fails; the same command run again
// resumes from the state its workers kept in RAM (no checkpoint on disk), and frees that RAM at
// the end.
TEST(ElasticTest, TheSameCommandResumesFromTheMemorySnapshots) {
  const std::string directory = StrCat("/dev/shm/weft-elastic-test-", ::getpid());
  const std::vector<std::string> argv =
      ElasticLaunch(2, {"--min-workers", "2", "--min-workers-timeout-ms", "1000"});
  std::vector<std::string> with_snapshots = argv;
  with_snapshots.insert(with_snapshots.end(),
                        {"--snapshot-every-steps", "50", "--snapshot-dir", directory});
  {
    Launch failing(with_snapshots);
    ASSERT_TRUE(failing.ok());
    ASSERT_TRUE(failing.WaitFor("kept the state of step 100 in memory", 0, kProgressMs).ok())
        << failing.output();
    Kill(failing, "worker:1");
    EXPECT_NE(failing.Exit(kTrainingMs), 0) << failing.output();
    ExpectNoneLeft(failing.output());
  }
  Launch again(with_snapshots);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again.Exit(kTrainingMs), 0) << again.output();
  const std::string output = again.output();
  // Each worker found its own snapshot (the killed one's may be older); the newest wins.
  int64_t newest = -1;
  const std::regex found(R"(found the state of step (\d+))");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), found);
       it != std::sregex_iterator(); ++it) {
    newest = std::max<int64_t>(newest, std::stoll((*it)[1]));
  }
  EXPECT_GE(newest, 100) << output;
  EXPECT_THAT(output, HasSubstr(StrCat("continuing after step ", newest)));
  ExpectTrainedTogether(Summaries(output), 2, 0);
  EXPECT_FALSE(std::filesystem::exists(directory)) << "the snapshots' RAM was not given back";
  std::filesystem::remove_all(directory);
}

// Below --min-workers the first survivor saves a checkpoint, then the job waits, and fails naming
// the missing worker once the deadline passes.
TEST(ElasticTest, BelowMinWorkersTheJobSavesThenFailsNamingTheMissing) {
  const std::string checkpoints = StrCat("/tmp/weft-elastic-test-ckpt-", ::getpid());
  std::vector<std::string> argv =
      ElasticLaunch(3, {"--min-workers", "3", "--min-workers-timeout-ms", "1000"});
  argv.insert(argv.end(), {"--checkpoint-dir", checkpoints});
  Launch launch(argv);
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft train: worker 0 of 3 took its first step", 0, kProgressMs).ok())
      << launch.output();
  Kill(launch, "worker:1");
  EXPECT_NE(launch.Exit(kTrainingMs), 0) << launch.output();
  const std::string output = launch.output();
  EXPECT_THAT(output, HasSubstr("fewer than --min-workers 3"));
  EXPECT_THAT(output, HasSubstr("missing: worker 1"));
  // Worker 0, the first survivor, saved where the job stood.
  std::smatch saved;
  ASSERT_TRUE(std::regex_search(
      output, saved, std::regex(R"(\[worker 0\] weft train: saved checkpoint \S+/ckpt-(\d+))")))
      << output;
  EXPECT_THAT(output, HasSubstr(StrCat("generation 1 ended after step ", saved[1].str())));
  EXPECT_TRUE(std::filesystem::exists(StrCat(checkpoints, "/ckpt-", saved[1].str())));
  ExpectNoneLeft(output);
  std::filesystem::remove_all(checkpoints);
}

TEST(ElasticTest, FlagErrors) {
  Launch restart({WEFT_BINARY, "launch", "--workers", "2", "--restart-failed", "--", "true"});
  ASSERT_TRUE(restart.ok());
  EXPECT_EQ(restart.Exit(), 2);
  EXPECT_THAT(restart.output(), HasSubstr("--restart-failed needs --ps or --elastic"));
  Launch too_many(
      {WEFT_BINARY, "launch", "--workers", "2", "--elastic", "--min-workers", "3", "--", "true"});
  ASSERT_TRUE(too_many.ok());
  EXPECT_EQ(too_many.Exit(), 2);
  EXPECT_THAT(too_many.output(), HasSubstr("--min-workers 3 is more than --workers 2"));
  Launch several({WEFT_BINARY, "launch", "--workers", "2", "--elastic", "--", WEFT_BINARY, "train",
                  "--strategy", "multi_worker_mirrored", "--steps-per-execution", "2"});
  ASSERT_TRUE(several.ok());
  EXPECT_NE(several.Exit(), 0);
  EXPECT_THAT(several.output(), HasSubstr("elastic training runs one step per execution"));
  // 128 splits over 2 and 4 workers, not 3: refused before any training, with a batch that does.
  Launch uneven({WEFT_BINARY, "launch", "--workers", "3", "--elastic", "--min-workers", "2", "--",
                 WEFT_BINARY, "train", "--strategy", "multi_worker_mirrored", "--batch-size",
                 "128"});
  ASSERT_TRUE(uneven.ok());
  EXPECT_EQ(uneven.Exit(), 2) << uneven.output();
  EXPECT_THAT(uneven.output(),
              HasSubstr("128 does not split over 3 workers; try --batch-size 126"));
  EXPECT_THAT(uneven.output(), Not(HasSubstr("took its first step")));
}

}  // namespace
}  // namespace weft::cli
