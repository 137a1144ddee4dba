// `weft train --trace FILE --trace-steps FIRST:LAST` end to end: the file it writes parses as
// Chrome trace-event JSON with every device's events and the traced steps, its --json summary
// gains each traced step's compute, communication and overlap times, bad --trace-steps values exit
// 2 naming the value, and a run on a two-task cluster traces both tasks with the all-reduce of
// their gradients across them. Every process is torn down by its owner even when a test
// fails.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "weft/cli/testing/cluster_test_util.h"
#include "weft/core/str_util.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/runtime/testing/timeline_test_util.h"
#include "weft/runtime/trace/step_stats_collector.h"
#include "weft/testing/child_process.h"

namespace weft::cli {
namespace {

using testing::Addresses;
using testing::kTask0;
using testing::kTask1;
using testing::StartCluster;

using ::testing::HasSubstr;
using weft::testing::ChildProcess;

constexpr int64_t kExitMs = 240000;
constexpr char kLocalCpu[] = "/job:localhost/replica:0/task:0/device:CPU:";

struct Finished {
  int code = -1;
  std::string output;
};

Finished RunWeft(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {WEFT_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(argv);
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return {};
  StatusOr<int> code = (*child)->WaitForExit(kExitMs);
  EXPECT_TRUE(code.ok()) << code.status() << "\n" << (*child)->output();
  return {code.ok() ? *code : -1, (*child)->output()};
}

// The --json summary: the last output line that is a JSON object.
nlohmann::json SummaryOf(const std::string& output) {
  size_t end = output.size();
  while (end > 0) {
    const size_t start = output.rfind('\n', end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    if (output[from] == '{') {
      return nlohmann::json::parse(output.substr(from, end - from), nullptr, false);
    }
    if (start == std::string::npos) break;
    end = start;
  }
  ADD_FAILURE() << "no JSON summary in:\n" << output;
  return nlohmann::json();
}

TEST(TrainTraceTest, WritesTheTracedStepsOfEveryDeviceAndTheirTimes) {
  io::testing::TempDir dir;
  const std::string file = dir.File("trace.json");
  Finished run = RunWeft({"train", "--devices", "2", "--threads", "1", "--max-steps", "4",
                          "--epochs", "1", "--trace", file, "--trace-steps", "2:3", "--json"});
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("wrote a trace of 2 steps to " + file));
  const nlohmann::json summary = SummaryOf(run.output);
  ASSERT_TRUE(summary.is_object()) << run.output;
  EXPECT_EQ(summary["trace_file"], file);
  ASSERT_EQ(summary["traced_steps"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& step = summary["traced_steps"][i];
    EXPECT_EQ(step["step"], i + 2);
    EXPECT_GT(step["compute_ms"].get<double>(), 0);
    // Two replicas all-reduce their gradients: communication, some of it beside compute.
    EXPECT_GT(step["communication_ms"].get<double>(), 0);
    EXPECT_GE(step["overlap_ms"].get<double>(), 0);
    EXPECT_LE(step["overlap_ms"].get<double>(),
              std::min(step["compute_ms"].get<double>(), step["communication_ms"].get<double>()));
    EXPECT_LE(step["compute_ms"].get<double>(), step["wall_ms"].get<double>());
  }

  const weft::testing::ParsedTrace trace = weft::testing::ParseTrace(io::testing::ReadBytes(file));
  std::set<std::string> steps, categories;
  for (const nlohmann::json& event : trace.complete) {
    if (event["cat"] == "step") steps.insert(event["name"].get<std::string>());
    categories.insert(event["cat"].get<std::string>());
  }
  EXPECT_EQ(steps, (std::set<std::string>{"step 2", "step 3"}));
  EXPECT_TRUE(categories.count("collective")) << nlohmann::json(categories).dump();
  for (int device = 0; device < 2; ++device) {
    EXPECT_FALSE(trace.EventsOnDevice(StrCat(kLocalCpu, device)).empty()) << device;
  }
}

TEST(TrainTraceTest, BadTraceStepsExitTwoNamingTheValue) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--trace", "t.json", "--trace-steps", "5:2"},
        std::vector<std::string>{"--trace", "t.json", "--trace-steps", "one:2"},
        std::vector<std::string>{"--trace", "t.json", "--trace-steps", "0:2"},
        std::vector<std::string>{"--trace-steps", "3:4"}}) {
    std::vector<std::string> args = {"train", "--max-steps", "1"};
    args.insert(args.end(), flags.begin(), flags.end());
    Finished run = RunWeft(args);
    EXPECT_EQ(run.code, 2) << run.output;
    EXPECT_THAT(run.output, HasSubstr("--trace-steps")) << run.output;
    EXPECT_THAT(run.output, HasSubstr(flags.back())) << run.output;
  }
}

TEST(TrainTraceTest, TracesBothTasksOfAClusterAndTheirAllReduceAcrossThem) {
  auto servers = StartCluster(2);
  ASSERT_EQ(servers.size(), 2u);
  const std::vector<std::string> addresses = Addresses(servers);
  io::testing::TempDir dir;
  const std::string file = dir.File("cluster.json");
  Finished run = RunWeft({"train", "--target", "grpc://" + addresses[0], "--cluster",
                          "worker=" + StrJoin(addresses, ","), "--max-steps", "3", "--epochs", "1",
                          "--trace", file, "--trace-steps", "2:2", "--json"});
  ASSERT_EQ(run.code, 0) << run.output;
  const nlohmann::json summary = SummaryOf(run.output);
  ASSERT_EQ(summary["traced_steps"].size(), 1u) << run.output;
  EXPECT_GT(summary["traced_steps"][0]["communication_ms"].get<double>(), 0);

  const weft::testing::ParsedTrace trace = weft::testing::ParseTrace(io::testing::ReadBytes(file));
  for (const char* task : {kTask0, kTask1}) {
    const std::vector<nlohmann::json> events = trace.EventsOnDevice(StrCat(task, "/device:CPU:0"));
    ASSERT_FALSE(events.empty()) << task;
    EXPECT_EQ(trace.TaskOf(events[0]), task);
  }
  // The replicas all-reduce their gradients across the tasks: each task's side of the collective
  // is on its own row, with its bytes and the other task as its peer.
  std::set<std::string> reducing_tasks;
  for (const nlohmann::json& event : trace.complete) {
    if (event["cat"] != "collective" || event["name"] != "all-reduce across tasks") continue;
    const std::string task = trace.TaskOf(event);
    const nlohmann::json& peers = event["args"]["peers"];
    ASSERT_EQ(peers.size(), 1u) << event.dump();
    EXPECT_NE(TaskOfDevice(peers[0].get<std::string>()), task) << event.dump();
    EXPECT_GT(event["args"]["bytes"].get<int64_t>(), 0) << event.dump();
    reducing_tasks.insert(task);
  }
  EXPECT_EQ(reducing_tasks, (std::set<std::string>{kTask0, kTask1}));
  std::set<std::string> categories;
  for (const nlohmann::json& event : trace.complete) {
    categories.insert(event["cat"].get<std::string>());
  }
  EXPECT_TRUE(categories.count("collective"));
  EXPECT_TRUE(categories.count("rpc"));
}

}  // namespace
}  // namespace weft::cli
