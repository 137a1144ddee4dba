// Timeline: a trace of synthetic steps over two tasks parses as trace-event JSON, names one
// process per task and a row per device, spills concurrent ops into rows of their own, keeps
// microsecond times from the earliest moment, and draws one flow from each _Send to its _Recv.
#include "weft/runtime/trace/timeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/runtime/testing/timeline_test_util.h"
#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {
namespace {

using ::testing::Contains;
using ::testing::UnorderedElementsAre;

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";
constexpr int64_t kBase = 1'700'000'000'000'000'000;  // a wall clock in nanoseconds

std::string Device(const std::string& task, int index) {
  return task + "/device:CPU:" + std::to_string(index);
}

proto::NodeExecStats* AddEvent(proto::DeviceStepStats* device, const std::string& op,
                               proto::NodeExecStats::Kind kind, int64_t start, int64_t end) {
  proto::NodeExecStats* event = device->add_node_stats();
  event->set_node_name(op + "_node");
  event->set_op(op);
  event->set_kind(kind);
  SetStatsTimes(kBase + start, kBase + end, event);
  return event;
}

proto::DeviceStepStats* AddDevice(proto::StepStats* stats, const std::string& device) {
  proto::DeviceStepStats* added = stats->add_dev_stats();
  added->set_device(device);
  added->set_task(TaskOfDevice(device));
  return added;
}

// Task 0 (two devices) sends a tensor to task 1 (two devices), which fetches it with RecvTensor;
// CPU:0 of task 0 runs two ops at once; the master's RunGraph calls are on task 0. `offset`
// shifts the step in time (nanoseconds).
proto::StepStats TwoTaskStep(int64_t offset) {
  proto::StepStats stats;
  proto::DeviceStepStats* t0_cpu0 = AddDevice(&stats, Device(kTask0, 0));
  proto::DeviceStepStats* t0_cpu1 = AddDevice(&stats, Device(kTask0, 1));
  proto::DeviceStepStats* t1_cpu0 = AddDevice(&stats, Device(kTask1, 0));
  proto::DeviceStepStats* t1_cpu1 = AddDevice(&stats, Device(kTask1, 1));
  AddEvent(t0_cpu0, "MatMul", proto::NodeExecStats::COMPUTE, offset + 1'000, offset + 3'500);
  AddEvent(t0_cpu0, "Relu", proto::NodeExecStats::COMPUTE, offset + 2'000, offset + 2'600);
  AddEvent(t0_cpu1, "Add", proto::NodeExecStats::COMPUTE, offset + 1'500, offset + 1'700);
  const std::string key =
      Device(kTask0, 0) + ";0000000000000001;" + Device(kTask1, 1) + ";edge_1_x;0:0";
  proto::NodeExecStats* send =
      AddEvent(t0_cpu0, "_Send", proto::NodeExecStats::SEND, offset + 3'600, offset + 3'700);
  send->set_rendezvous_key(key);
  send->set_transfer_bytes(4096);
  send->add_peers(Device(kTask1, 1));
  proto::NodeExecStats* fetch = AddEvent(t1_cpu1, "RecvTensor", proto::NodeExecStats::RECV_TENSOR,
                                         offset + 1'200, offset + 3'900);
  fetch->set_rendezvous_key(key);
  fetch->set_transfer_bytes(4096);
  fetch->add_peers(kTask0);
  proto::NodeExecStats* recv =
      AddEvent(t1_cpu1, "_Recv", proto::NodeExecStats::RECV, offset + 1'100, offset + 4'000);
  recv->set_rendezvous_key(key);
  recv->set_transfer_bytes(4096);
  AddEvent(t1_cpu0, "Square", proto::NodeExecStats::COMPUTE, offset + 1'000, offset + 1'100);
  AddEvent(t1_cpu1, "Neg", proto::NodeExecStats::COMPUTE, offset + 4'100, offset + 4'300);
  proto::DeviceStepStats* master = AddDevice(&stats, std::string(kTask0) + "/master");
  for (const char* task : {kTask0, kTask1}) {
    AddEvent(master, "RunGraph", proto::NodeExecStats::RPC, offset + 500, offset + 4'500)
        ->add_peers(task);
  }
  return stats;
}

TEST(TimelineTest, EveryDeviceOfEveryTaskGetsARowUnderItsTask) {
  Timeline timeline;
  timeline.AddStep(11, TwoTaskStep(0), kBase, kBase + 5'000);
  const testing::ParsedTrace trace = testing::ParseTrace(timeline.ToJson());
  std::set<std::string> processes;
  for (const auto& [pid, name] : trace.process_names) processes.insert(name);
  EXPECT_THAT(processes, UnorderedElementsAre("steps", kTask0, kTask1));
  for (const char* task : {kTask0, kTask1}) {
    for (int index = 0; index < 2; ++index) {
      const std::vector<nlohmann::json> events = trace.EventsOnDevice(Device(task, index));
      ASSERT_FALSE(events.empty()) << Device(task, index);
      for (const nlohmann::json& event : events) {
        EXPECT_EQ(trace.TaskOf(event), task);
        const auto row = std::make_pair(event["pid"].get<int>(), event["tid"].get<int>());
        EXPECT_THAT(trace.thread_names.at(row),
                    ::testing::StartsWith("CPU:" + std::to_string(index)));
      }
    }
  }
  std::set<std::string> rows;
  for (const auto& [row, name] : trace.thread_names) rows.insert(name);
  // Relu overlaps MatMul on task 0's CPU:0: a second compute row. The rest have rows of their own.
  EXPECT_THAT(rows, Contains("CPU:0 (2)"));
  EXPECT_THAT(rows, Contains("CPU:1 send/recv"));
  EXPECT_THAT(rows, Contains("CPU:1 RecvTensor"));
  EXPECT_THAT(rows, Contains("master RunGraph"));
  EXPECT_THAT(rows, Contains("master RunGraph (2)"));
}

TEST(TimelineTest, TimesAreMicrosecondsFromTheEarliestMoment) {
  Timeline timeline;
  timeline.AddStep(3, TwoTaskStep(0), kBase + 200, kBase + 5'000);
  const testing::ParsedTrace trace = testing::ParseTrace(timeline.ToJson());
  EXPECT_EQ(trace.json["otherData"]["origin_wall_nanos"].get<int64_t>(), kBase + 200);
  bool found = false;
  for (const nlohmann::json& event : trace.complete) {
    if (event["name"] == "MatMul") {
      found = true;
      EXPECT_DOUBLE_EQ(event["ts"].get<double>(), 0.8);   // 1000 ns - 200 ns
      EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 2.5);  // 2500 ns
      EXPECT_EQ(event["args"]["step"], 3);
    }
    if (event["name"] == "step 3") {
      EXPECT_DOUBLE_EQ(event["ts"].get<double>(), 0.0);
      EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 4.8);
    }
  }
  EXPECT_TRUE(found);
}

TEST(TimelineTest, EachSendFlowsToItsRecvInEveryStep) {
  Timeline timeline;
  timeline.AddStep(1, TwoTaskStep(0), kBase, kBase + 5'000);
  timeline.AddStep(2, TwoTaskStep(10'000), kBase + 10'000, kBase + 15'000);
  const testing::ParsedTrace trace = testing::ParseTrace(timeline.ToJson());
  ASSERT_EQ(trace.flows.size(), 2u);
  for (const auto& [id, flow] : trace.flows) {
    const auto& [start, end] = flow;
    EXPECT_EQ(trace.process_names.at(start["pid"].get<int>()), kTask0);
    EXPECT_EQ(trace.process_names.at(end["pid"].get<int>()), kTask1);
    EXPECT_EQ(start["args"]["rendezvous_key"], end["args"]["rendezvous_key"]);
    // Each end lies inside the slice it binds to: the _Send on one side, the _Recv on the other.
    int bound = 0;
    for (const nlohmann::json& event : trace.complete) {
      for (const nlohmann::json* end_point : {&start, &end}) {
        const double ts = (*end_point)["ts"].get<double>();
        if (event["pid"] == (*end_point)["pid"] && event["tid"] == (*end_point)["tid"] &&
            event["ts"].get<double>() <= ts &&
            ts <= event["ts"].get<double>() + event["dur"].get<double>()) {
          EXPECT_EQ(event["name"], end_point == &start ? "_Send" : "_Recv");
          ++bound;
        }
      }
    }
    EXPECT_EQ(bound, 2);
  }
}

TEST(TimelineTest, StepsCarryTheirComputeAndCommunicationTimes) {
  Timeline timeline;
  timeline.AddStep(7, TwoTaskStep(0), kBase, kBase + 5'000);
  const testing::ParsedTrace trace = testing::ParseTrace(timeline.ToJson());
  const nlohmann::json& step = trace.json["otherData"]["steps"][0];
  EXPECT_EQ(step["step"], 7);
  // Compute [1000, 3500) and [4100, 4300); communication [1100, 4000) (RunGraph counts in neither).
  EXPECT_DOUBLE_EQ(step["compute_ms"].get<double>(), 2.7e-3);
  EXPECT_DOUBLE_EQ(step["communication_ms"].get<double>(), 2.9e-3);
  EXPECT_DOUBLE_EQ(step["overlap_ms"].get<double>(), 2.4e-3);
}

TEST(TimelineTest, AnEmptyTimelineIsAValidTrace) {
  const testing::ParsedTrace trace = testing::ParseTrace(Timeline().ToJson());
  EXPECT_TRUE(trace.complete.empty());
  EXPECT_TRUE(trace.flows.empty());
}

TEST(TimelineTest, RenameTaskMovesALocalSessionsDevices) {
  proto::StepStats stats;
  AddDevice(&stats, "/job:localhost/replica:0/task:0/device:CPU:1");
  AddDevice(&stats, Device(kTask0, 0));
  RenameTask("/job:localhost/replica:0/task:0", kTask1, &stats);
  EXPECT_EQ(stats.dev_stats(0).device(), Device(kTask1, 1));
  EXPECT_EQ(stats.dev_stats(0).task(), kTask1);
  EXPECT_EQ(stats.dev_stats(1).device(), Device(kTask0, 0));
}

}  // namespace
}  // namespace weft
