#include "weft/cli/launch_command.h"

#include <chrono>
#include <set>

#include <gtest/gtest.h>

#include "weft/cli/process_group.h"
#include "weft/distributed/cluster/cluster_spec.h"

namespace weft::cli {
namespace {

TEST(LaunchCommandTest, PicksDistinctPorts) {
  StatusOr<std::vector<int>> ports = PickFreePorts(8);
  ASSERT_TRUE(ports.ok()) << ports.status();
  EXPECT_EQ(std::set<int>(ports->begin(), ports->end()).size(), 8u);
  for (int port : *ports) EXPECT_GT(port, 0);
}

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

ChildSpec Shell(const std::string& script) {
  return ChildSpec{{"sh", "-c", script}, {"PATH=/usr/bin:/bin"}, "[test] "};
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
  ChildSpec missing{{"/nonexistent/weft-no-such-program"}, {}, "[test] "};
  EXPECT_EQ(RunChildren({Shell("sleep 30"), missing}, {}), 127);
}

}  // namespace
}  // namespace weft::cli
