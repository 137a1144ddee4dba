// `weft launch --ps` end to end: the real binary starts real `weft server` workers and ps tasks
// on loopback and a shell command as the chief. Checks the "started" lines and the cluster the
// chief sees, that the launch exits with the chief's code and leaves no server behind, that
// --restart-failed brings a killed server back on its address (and gives up after
// --max-restarts), that without it a killed server is only named, that parameter-server training
// runs as the chief, and the flag errors (the failures parameter-server training survives are in
// parameter_server_failures_test.cc). Every launch is a Launch (testing/launch_test_util.h).
#include <cerrno>
#include <csignal>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/cli/testing/launch_test_util.h"
#include "weft/core/str_util.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/child_process.h"

namespace weft::cli {
namespace {

using testing::FindStart;
using testing::Gone;
using ::testing::HasSubstr;
using testing::kWaitMs;
using testing::Launch;
using testing::LaunchArgs;
using ::testing::Not;
using testing::Start;
using testing::Starts;

// The chief's script: exits 0 once `path` exists, 9 after about 20 s.
std::string AwaitFile(const std::string& path) {
  return "for i in $(seq 400); do [ -e '" + path + "' ] && exit 0; sleep 0.05; done; echo 'no " +
         path + "'; exit 9";
}

void Touch(const std::string& path) { std::ofstream(path) << "go\n"; }

TEST(LaunchPsTest, StartsEveryTaskAndTheChiefSeesTheWholeCluster) {
  // The launch's stderr is dropped: the "started" lines must come on stdout.
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$@\" 2>/dev/null", "sh"};
  for (const std::string& arg :
       LaunchArgs({"--workers", "2", "--ps", "1"}, "echo \"cfg $WEFT_CONFIG\"; exit 3")) {
    argv.push_back(arg);
  }
  Launch launch(argv);
  ASSERT_TRUE(launch.ok());
  EXPECT_EQ(launch.Exit(), 3) << launch.output();
  const std::vector<Start> starts = Starts(launch.output());
  std::vector<std::string> tasks;
  for (const Start& start : starts) tasks.push_back(start.verb + " " + start.task);
  EXPECT_THAT(tasks, ::testing::UnorderedElementsAre("started worker:0", "started worker:1",
                                                     "started ps:0", "started chief:0"))
      << launch.output();
  std::map<std::string, std::string> address_of;
  for (const Start& start : starts) address_of[start.task] = start.address;

  const std::string marker = "[chief] cfg ";
  const size_t at = launch.output().find(marker);
  ASSERT_NE(at, std::string::npos) << launch.output();
  const size_t end = launch.output().find('\n', at);
  StatusOr<ServerConfig> config =
      ParseWeftConfig(launch.output().substr(at + marker.size(), end - at - marker.size()));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->task.job, "chief");
  EXPECT_EQ(config->task.index, 0);
  EXPECT_EQ(config->cluster.ToFlag(),
            StrCat("chief=", address_of["chief:0"], ";ps=", address_of["ps:0"],
                   ";worker=", address_of["worker:0"], ",", address_of["worker:1"]));
  for (const Start& start : starts) EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
}

TEST(LaunchPsTest, RestartFailedBringsAKilledServerBackOnItsAddress) {
  io::testing::TempDir dir;
  Launch launch(LaunchArgs({"--workers", "1", "--ps", "1", "--restart-failed", "--max-restarts",
                            "1", "--timeout-ms", "5000"},
                           AwaitFile(dir.File("go"))));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft launch: started chief:0").ok()) << launch.output();
  const Start ps = FindStart(launch.output(), "started", "ps:0");
  const std::string listening = "[ps 0] weft server listening on " + ps.address + "\n";
  ASSERT_TRUE(launch.WaitFor(listening).ok()) << launch.output();

  ASSERT_EQ(::kill(ps.pid, SIGKILL), 0);
  ASSERT_TRUE(
      launch.WaitFor(StrCat("weft launch: ps:0 (pid ", ps.pid, ") exited with signal 9")).ok())
      << launch.output();
  ASSERT_TRUE(launch.WaitFor("weft launch: restarted ps:0 pid ").ok()) << launch.output();
  const Start again = FindStart(launch.output(), "restarted", "ps:0");
  EXPECT_EQ(again.address, ps.address);
  EXPECT_NE(again.pid, ps.pid);
  // The new server serves the same task on the same address.
  const size_t restarted_at = launch.output().find("weft launch: restarted ps:0");
  ASSERT_TRUE(launch.WaitFor(listening, restarted_at).ok()) << launch.output();

  // Its one restart used, the next loss is only reported.
  ASSERT_EQ(::kill(again.pid, SIGKILL), 0);
  ASSERT_TRUE(launch.WaitFor("weft launch: giving up on ps:0 after 1 restart(s)").ok())
      << launch.output();

  Touch(dir.File("go"));
  EXPECT_EQ(launch.Exit(), 0) << launch.output();
  EXPECT_EQ(Starts(launch.output()).size(), 4u) << launch.output();
  for (const Start& start : Starts(launch.output())) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

TEST(LaunchPsTest, WithoutRestartAKilledServerIsNamedAndTheChiefFinishes) {
  io::testing::TempDir dir;
  Launch launch(LaunchArgs({"--workers", "1", "--ps", "2"}, AwaitFile(dir.File("go"))));
  ASSERT_TRUE(launch.ok());
  ASSERT_TRUE(launch.WaitFor("weft launch: started chief:0").ok()) << launch.output();
  // Every server serves its own task of the launch's cluster.
  for (const char* task : {"worker:0", "ps:0", "ps:1"}) {
    const Start server = FindStart(launch.output(), "started", task);
    const std::string job = std::string(task).substr(0, std::string(task).find(':'));
    const std::string index = std::string(task).substr(job.size() + 1);
    ASSERT_TRUE(launch
                    .WaitFor(StrCat("[", job, " ", index, "] weft server listening on ",
                                    server.address, "\n"))
                    .ok())
        << launch.output();
  }
  const Start ps = FindStart(launch.output(), "started", "ps:1");
  ASSERT_EQ(::kill(ps.pid, SIGKILL), 0);
  ASSERT_TRUE(
      launch.WaitFor(StrCat("weft launch: ps:1 (pid ", ps.pid, ") exited with signal 9")).ok())
      << launch.output();

  Touch(dir.File("go"));
  EXPECT_EQ(launch.Exit(), 0) << launch.output();
  EXPECT_THAT(launch.output(), Not(HasSubstr("restarted")));
  for (const Start& start : Starts(launch.output())) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// `weft train --strategy parameter_server` as the chief of the launch: steps on both workers, the
// variables on both ps tasks, and nothing left running after it.
TEST(LaunchPsTest, ParameterServerTrainingRunsAsTheChief) {
  Launch launch(LaunchArgs(
      {"--workers", "2", "--ps", "2"},
      StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --max-steps 40 --json")));
  ASSERT_TRUE(launch.ok());
  ASSERT_EQ(launch.Exit(), 0) << launch.output();
  EXPECT_THAT(launch.output(), HasSubstr("\"ps_tasks\":2")) << launch.output();
  EXPECT_THAT(launch.output(), HasSubstr("\"workers\":2"));
  EXPECT_THAT(launch.output(), HasSubstr("\"steps\":40"));
  for (const Start& start : Starts(launch.output())) {
    EXPECT_TRUE(Gone(start.pid)) << start.task << " " << start.pid;
  }
}

// Without ps tasks the strategy names what it needs, and the chief's error ends the launch.
TEST(LaunchPsTest, ParameterServerTrainingWithoutAClusterNamesWhatItNeeds) {
  Launch launch({WEFT_BINARY, "train", "--strategy", "parameter_server", "--max-steps", "1"});
  ASSERT_TRUE(launch.ok());
  EXPECT_EQ(launch.Exit(), 2) << launch.output();
  EXPECT_THAT(launch.output(), HasSubstr("--ps M")) << launch.output();
  Launch workers_only(
      LaunchArgs({"--workers", "1"},
                 StrCat("exec ", WEFT_BINARY, " train --strategy parameter_server --max-steps 1")));
  ASSERT_TRUE(workers_only.ok());
  EXPECT_NE(workers_only.Exit(), 0) << workers_only.output();
  EXPECT_THAT(workers_only.output(), HasSubstr("'ps' job")) << workers_only.output();
}

TEST(LaunchPsTest, BadFlagsExit2NamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--workers", "0", "--ps", "1"}, "--workers"},
      {{"--workers", "1", "--ps", "-1"}, "--ps"},
      {{"--workers", "1", "--ps", "0"}, "--ps"},
      {{"--workers", "1", "--restart-failed"}, "--restart-failed needs --ps or --elastic"},
      {{"--workers", "1", "--ps", "1", "--max-restarts", "2"},
       "--max-restarts requires --restart-failed"},
      {{"--workers", "1", "--ps", "1", "--restart-failed", "--max-restarts", "-1"},
       "--max-restarts"},
  };
  for (const auto& [flags, message] : cases) {
    Launch launch(LaunchArgs(flags, "exit 0"));
    ASSERT_TRUE(launch.ok());
    EXPECT_EQ(launch.Exit(), 2) << StrJoin(flags, " ") << "\n" << launch.output();
    EXPECT_THAT(launch.output(), HasSubstr(message)) << StrJoin(flags, " ");
    EXPECT_THAT(launch.output(), Not(HasSubstr("weft launch: started")));
  }
}

}  // namespace
}  // namespace weft::cli
