#include "weft/cli/launch_command.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <utility>

#include <gtest/gtest.h>
#include <unistd.h>

#include "weft/cli/process_group.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/io/testing/io_test_util.h"

namespace weft::cli {
namespace {

TEST(LaunchCommandTest, EachWorkersConfigNamesItsTaskOfTheSameCluster) {
  const std::vector<std::string> addresses = {"127.0.0.1:5000", "127.0.0.1:5001"};
  for (int i = 0; i < 2; ++i) {
    StatusOr<ServerConfig> config = ParseWeftConfig(WeftConfigJson(addresses, i));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->cluster.ToFlag(), "worker=127.0.0.1:5000,127.0.0.1:5001");
    EXPECT_EQ(config->task.job, "worker");
    EXPECT_EQ(config->task.index, i);
  }
}

TEST(LaunchCommandTest, APsPlanGivesEveryTaskOneClusterAndItsOwnTask) {
  LaunchFlags flags;
  flags.workers = 2;
  flags.ps = 1;
  flags.restart_failed = true;
  flags.max_restarts = 5;
  flags.devices_per_worker = 3;
  flags.command = {"train", "--x"};
  const std::vector<std::string> addresses = {"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3",
                                              "127.0.0.1:4"};
  const PsLaunchPlan plan = PlanPsLaunch(flags, addresses, {"HOME=/h"}, "/bin/weft");
  // The chief's port is its own choice (0): nothing dials it.
  const std::string cluster = "chief=127.0.0.1:0;ps=127.0.0.1:4;worker=127.0.0.1:2,127.0.0.1:3";
  EXPECT_EQ(plan.tasks, (std::vector<std::string>{"worker:0", "worker:1", "ps:0", "chief:0"}));
  EXPECT_EQ(plan.addresses,
            (std::vector<std::string>{"127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:0"}));
  ASSERT_EQ(plan.servers.size(), 3u);
  for (size_t i = 0; i < plan.servers.size(); ++i) {
    const ChildSpec& server = plan.servers[i].child;
    const std::string job = i < 2 ? "worker" : "ps";
    const int index = i < 2 ? static_cast<int>(i) : 0;
    EXPECT_EQ(server.argv, (std::vector<std::string>{"/bin/weft", "server", "--job", job, "--task",
                                                     std::to_string(index)}));
    EXPECT_EQ(server.name, plan.tasks[i]);
    EXPECT_EQ(server.prefix, "[" + job + " " + std::to_string(index) + "] ");
    EXPECT_EQ(plan.servers[i].max_restarts, 5);
    ASSERT_GE(server.env.size(), 2u);
    EXPECT_EQ(server.env[0], "HOME=/h");
    StatusOr<ServerConfig> config = ParseWeftConfig(server.env[1].substr(strlen("WEFT_CONFIG=")));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->cluster.ToFlag(), cluster);
    EXPECT_EQ(config->task.job, job);
    EXPECT_EQ(config->task.index, index);
    // Workers get their devices; a ps keeps the server's default of one.
    EXPECT_EQ(server.env.size(), job == "worker" ? 3u : 2u);
  }
  EXPECT_EQ(plan.chief.argv, flags.command);
  EXPECT_EQ(plan.chief.prefix, "[chief] ");
  ASSERT_EQ(plan.chief.env.size(), 3u);
  StatusOr<ServerConfig> chief = ParseWeftConfig(plan.chief.env[1].substr(strlen("WEFT_CONFIG=")));
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_EQ(chief->cluster.ToFlag(), cluster);
  EXPECT_EQ(chief->task.job, "chief");
  EXPECT_EQ(chief->task.index, 0);
  EXPECT_EQ(plan.chief.env[2], "WEFT_DEVICES_PER_WORKER=3");

  flags.restart_failed = false;
  for (const ServiceSpec& server : PlanPsLaunch(flags, addresses, {}, "weft").servers) {
    EXPECT_EQ(server.max_restarts, 0);
  }
}

ChildSpec Shell(const std::string& script) {
  return ChildSpec{{"sh", "-c", script}, {"PATH=/usr/bin:/bin"}, "[test] ", ""};
}

TEST(RunChildrenTest, AllSucceedingIsZero) {
  EXPECT_EQ(RunChildren({Shell("true"), Shell("echo hi")}, {}), 0);
}

TEST(RunChildrenTest, TheFirstFailureStopsTheOthersAndGivesItsCode) {
  RunChildrenOptions options;
  options.grace_ms = 5000;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunChildren({Shell("sleep 30"), Shell("exit 3"), Shell("sleep 30")}, options), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RunChildrenTest, AChildKilledBySignalGives128PlusTheSignal) {
  EXPECT_EQ(RunChildren({Shell("kill -9 $$")}, {}), 128 + 9);
}

TEST(RunChildrenTest, ChildrenIgnoringSigtermAreKilledAfterTheGrace) {
  RunChildrenOptions options;
  options.grace_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunChildren({Shell("trap '' TERM; sleep 30"), Shell("exit 5")}, options), 5);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RunChildrenTest, ACommandThatDoesNotExistIs127) {
  ChildSpec missing{{"/nonexistent/weft-no-such-program"}, {}, "[test] ", ""};
  EXPECT_EQ(RunChildren({Shell("sleep 30"), missing}, {}), 127);
}

ServiceSpec Service(const std::string& script, int max_restarts = 0) {
  return ServiceSpec{Shell(script), max_restarts};
}

// A shell loop that exits with `code` once `path` holds `lines` lines, or with 9 after about 10 s.
std::string AwaitLines(const std::string& path, int lines, int code = 0) {
  return "for i in $(seq 200); do [ \"$(cat '" + path + "' 2>/dev/null | wc -l)\" -ge " +
         std::to_string(lines) + " ] && exit " + std::to_string(code) +
         "; sleep 0.05; done; exit 9";
}

int LineCount(const std::string& path) {
  std::ifstream file(path);
  int lines = 0;
  for (std::string line; std::getline(file, line);) ++lines;
  return lines;
}

TEST(RunWithServicesTest, TheMainChildsExitEndsTheGroupWithItsCode) {
  RunChildrenOptions options;
  options.grace_ms = 5000;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunWithServices(Shell("exit 3"), {Service("sleep 30"), Service("sleep 30")}, options),
            3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(RunWithServices(Shell("kill -9 $$"), {Service("sleep 30")}, options), 128 + 9);
}

TEST(RunWithServicesTest, ServicesIgnoringSigtermAreKilledAfterTheGrace) {
  RunChildrenOptions options;
  options.grace_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunWithServices(Shell("true"), {Service("trap '' TERM; sleep 30")}, options), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RunWithServicesTest, AServiceThatExitsIsStartedAgainUpToItsLimit) {
  io::testing::TempDir dir;
  const std::string runs = dir.File("runs");
  std::vector<std::pair<size_t, int>> starts;
  RunChildrenOptions options;
  options.on_start = [&starts](size_t child, pid_t, int restarts) {
    starts.emplace_back(child, restarts);
  };
  // The service fails at once every time; the main child ends after its third run.
  EXPECT_EQ(RunWithServices(Shell(AwaitLines(runs, 3)),
                            {Service("echo run >> '" + runs + "'; exit 1", 2)}, options),
            0);
  EXPECT_EQ(LineCount(runs), 3);
  EXPECT_EQ(starts, (std::vector<std::pair<size_t, int>>{{0, 0}, {1, 0}, {0, 1}, {0, 2}}));
}

TEST(RunWithServicesTest, WithoutRestartsALostServiceLeavesTheMainChildRunning) {
  io::testing::TempDir dir;
  const std::string runs = dir.File("runs");
  int service_starts = 0;
  RunChildrenOptions options;
  options.on_start = [&service_starts](size_t child, pid_t, int) { service_starts += child == 0; };
  EXPECT_EQ(RunWithServices(Shell(AwaitLines(runs, 1, 5)),
                            {Service("echo run >> '" + runs + "'; exit 1")}, options),
            5);
  EXPECT_EQ(service_starts, 1);
}

TEST(RunWithServicesTest, AMainChildThatCannotStartIs127AndStopsTheServices) {
  ChildSpec missing{{"/nonexistent/weft-no-such-program"}, {}, "[chief] ", "chief:0"};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunWithServices(missing, {Service("sleep 30")}, {}), 127);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace weft::cli
