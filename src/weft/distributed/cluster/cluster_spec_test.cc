#include "weft/distributed/cluster/cluster_spec.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

void ExpectError(const Status& status, std::initializer_list<std::string_view> parts) {
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  for (std::string_view part : parts) {
    EXPECT_NE(status.message().find(part), std::string::npos) << "'" << part << "' in " << status;
  }
}

TEST(ClusterSpecTest, ParsesTheFlagForm) {
  auto cluster = ClusterSpec::FromFlag("worker=127.0.0.1:2222,127.0.0.1:2223;ps=localhost:0");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ(cluster->NumTasks("worker"), 2);
  EXPECT_EQ(cluster->NumTasks("ps"), 1);
  EXPECT_EQ(cluster->NumTasks("chief"), 0);
  EXPECT_TRUE(cluster->HasJob("ps"));
  EXPECT_EQ(cluster->TaskAddress("worker", 1).value(), "127.0.0.1:2223");
  EXPECT_EQ(cluster->TaskNames(),
            (std::vector<std::string>{"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0",
                                      "/job:worker/replica:0/task:1"}));
  auto again = ClusterSpec::FromFlag(cluster->ToFlag());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->jobs(), cluster->jobs());
}

TEST(ClusterSpecTest, LookupsNameWhatIsMissing) {
  auto cluster = ClusterSpec::FromFlag("worker=127.0.0.1:2222").value();
  StatusOr<std::string> no_job = cluster.TaskAddress("ps", 0);
  ASSERT_TRUE(IsNotFound(no_job.status()));
  EXPECT_NE(no_job.status().message().find("'ps'"), std::string::npos);
  EXPECT_NE(no_job.status().message().find("worker"), std::string::npos);
  StatusOr<std::string> no_task = cluster.TaskAddress("worker", 3);
  ASSERT_TRUE(IsNotFound(no_task.status()));
  EXPECT_NE(no_task.status().message().find("task 3"), std::string::npos);
  EXPECT_TRUE(ValidateTask(cluster, {"worker", 0}).ok());
  ExpectError(ValidateTask(cluster, {"worker", -1}), {"worker:-1"});
}

TEST(ClusterSpecTest, RefusesMalformedFlags) {
  ExpectError(ClusterSpec::FromFlag("").status(), {"is not job=host:port"});
  ExpectError(ClusterSpec::FromFlag("worker").status(), {"'worker'"});
  ExpectError(ClusterSpec::FromFlag("worker=").status(), {"host:port"});
  ExpectError(ClusterSpec::FromFlag("worker=h:1;worker=h:2").status(), {"twice"});
  ExpectError(ClusterSpec::FromFlag("Worker=h:1").status(), {"'Worker'"});
  ExpectError(ClusterSpec::FromFlag("worker=h:99999").status(), {"99999", "[0, 65535]"});
  ExpectError(ClusterSpec::FromFlag("worker=h:2x").status(), {"'2x'"});
  ExpectError(ClusterSpec::FromFlag("worker=:2222").status(), {"host:port"});
  ExpectError(ClusterSpec::FromFlag("worker=h:1,,h:2").status(), {"task 1"});
}

// Found by fuzz/weft_config_fuzzer: WEFT_CONFIG accepted the address "1;7.0.0.1:2223", whose
// cluster then printed as a flag that does not parse.
TEST(ClusterSpecTest, RefusesAddressesThatBreakTheFlagForm) {
  ExpectError(ParseWeftConfig(R"({"cluster": {"worker": ["h:1", "1;7.0.0.1:2223"]},
                                  "task": {"type": "worker", "index": 1}})")
                  .status(),
              {"WEFT_CONFIG", "task 1", "'1;7.0.0.1:2223'"});
  ExpectError(ClusterSpec::FromJobs({{"worker", {"a,b:1"}}}).status(), {"'a,b:1'"});
  auto cluster = ClusterSpec::FromJobs({{"worker", {"h=x:1"}}, {"ps", {"[::1]:2"}}});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto again = ClusterSpec::FromFlag(cluster->ToFlag());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->jobs(), cluster->jobs());
}

TEST(ClusterSpecTest, ParsesWeftConfig) {
  auto config = ParseWeftConfig(R"({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"],
                                                "ps": ["127.0.0.1:3"]},
                                    "task": {"type": "worker", "index": 1}})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->task.job, "worker");
  EXPECT_EQ(config->task.index, 1);
  EXPECT_EQ(config->cluster.TaskAddress("ps", 0).value(), "127.0.0.1:3");
}

TEST(ClusterSpecTest, RefusesBadWeftConfigSayingWhatIsWrong) {
  ExpectError(ParseWeftConfig("{not json").status(), {"not valid JSON"});
  ExpectError(ParseWeftConfig("[]").status(), {"\"cluster\""});
  ExpectError(ParseWeftConfig(R"({"cluster": {"worker": "h:1"}})").status(), {"list of addresses"});
  ExpectError(ParseWeftConfig(R"({"cluster": {"worker": [7]}})").status(), {"not a string"});
  ExpectError(ParseWeftConfig(R"({"cluster": {"worker": ["h:1"]}})").status(), {"\"task\""});
  ExpectError(
      ParseWeftConfig(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}})").status(),
      {"\"index\""});
  ExpectError(
      ParseWeftConfig(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "ps", "index": 0}})")
          .status(),
      {"ps:0", "no job 'ps'"});
  ExpectError(ParseWeftConfig(R"({"cluster": {"worker": ["h:x"]}, "task": {}})").status(),
              {"WEFT_CONFIG", "'x'"});
}

}  // namespace
}  // namespace weft
