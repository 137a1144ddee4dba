// A traced step on a real cluster: two `weft server` processes on loopback (two devices each),
// one step that reads a 64 KB tensor of task 0 on every device of both tasks and sums the squares
// on task 0 (so tensors cross tasks both ways, over the bulk path). The RunMetadata the client gets
// holds events for every device of both tasks, the master's RunGraph calls and every RecvTensor
// with its bytes and peer; its Chrome trace parses and has a flow for each cross-task tensor.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/cli/testing/cluster_test_util.h"
#include "weft/config.pb.h"
#include "weft/core/str_util.h"
#include "weft/distributed/rpc/grpc_session.h"
#include "weft/graph/builder/ops.h"
#include "weft/runtime/testing/timeline_test_util.h"
#include "weft/runtime/trace/step_stats_collector.h"
#include "weft/runtime/trace/timeline.h"

namespace weft::cli {
namespace {

using testing::Addresses;
using testing::ClusterOptions;
using testing::kTask0;
using testing::kTask1;
using testing::NewSessionOrDie;
using testing::StartCluster;

using ::testing::ElementsAre;

constexpr int kRows = 128;  // 128 x 128 floats: 64 KB, the bulk path's threshold

std::string Cpu(const std::string& task, int index) { return StrCat(task, "/device:CPU:", index); }

// The source and destination devices of a rendezvous key ("src;incarnation;dst;name;frame").
std::pair<std::string, std::string> KeyEnds(const std::string& key) {
  std::vector<std::string> parts(1);
  for (char c : key) {
    if (c == ';') {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  EXPECT_EQ(parts.size(), 5u) << key;
  return parts.size() == 5 ? std::make_pair(parts[0], parts[2]) : std::make_pair(key, key);
}

TEST(ClusterTraceTest, ATracedStepCoversEveryDeviceOfBothTasks) {
  auto servers = StartCluster(2, {"--devices", "2"});
  ASSERT_EQ(servers.size(), 2u);
  std::unique_ptr<Session> session = NewSessionOrDie(ClusterOptions(Addresses(servers)));
  ASSERT_NE(session, nullptr);
  const std::vector<std::string> devices = {Cpu(kTask0, 0), Cpu(kTask0, 1), Cpu(kTask1, 0),
                                            Cpu(kTask1, 1)};
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x").WithDevice(devices[0]), DataType::kFloat);
  std::vector<Output> squares;
  for (size_t d = 0; d < devices.size(); ++d) {
    squares.push_back(ops::Square(root.WithOpName(StrCat("square", d)).WithDevice(devices[d]), x));
  }
  Output sum = ops::AddN(root.WithOpName("sum").WithDevice(devices[1]), squares);
  ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  const Tensor input = Tensor::FromVector<float>(std::vector<float>(kRows * kRows, 2.0f),
                                                 TensorShape({kRows, kRows}));
  std::vector<Tensor> outputs;
  // One untraced step first: the trace shows a steady step.
  ASSERT_TRUE(session->Run({{x.name(), input}}, {sum.name()}, {}, &outputs).ok());
  proto::RunOptions options;
  options.set_trace_level(proto::RunOptions::FULL_TRACE);
  proto::RunMetadata metadata;
  const int64_t start = StepStatsNowNanos();
  Status status = session->Run(options, {{x.name(), input}}, {sum.name()}, {}, &outputs, &metadata);
  const int64_t end = StepStatsNowNanos();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(outputs[0].data<float>()[0], 16.0f);

  // The stats: every device under its task, the master's calls, RecvTensor with bytes and peer.
  std::map<std::string, int> events_by_device;
  std::vector<std::string> run_graph_peers;
  int cross_task_sends = 0, recv_tensors = 0;
  for (const proto::DeviceStepStats& device : metadata.step_stats().dev_stats()) {
    EXPECT_EQ(device.task(), TaskOfDevice(device.device()));
    events_by_device[device.device()] += device.node_stats_size();
    for (const proto::NodeExecStats& event : device.node_stats()) {
      if (event.kind() == proto::NodeExecStats::RPC) {
        EXPECT_EQ(device.device(), StrCat(kTask0, "/master"));
        EXPECT_GT(event.transfer_bytes(), 0);
        run_graph_peers.push_back(event.peers(0));
      }
      if (event.kind() == proto::NodeExecStats::SEND) {
        const auto [src, dst] = KeyEnds(event.rendezvous_key());
        if (TaskOfDevice(src) != TaskOfDevice(dst)) ++cross_task_sends;
      }
      if (event.kind() == proto::NodeExecStats::RECV_TENSOR) {
        ++recv_tensors;
        EXPECT_EQ(event.transfer_bytes(), kRows * kRows * 4) << event.timeline_label();
        const auto [src, dst] = KeyEnds(event.rendezvous_key());
        EXPECT_EQ(dst, device.device());
        EXPECT_THAT(event.peers(), ElementsAre(TaskOfDevice(src)));
      }
    }
  }
  for (const std::string& device : devices) EXPECT_GT(events_by_device[device], 0) << device;
  EXPECT_THAT(run_graph_peers, ::testing::UnorderedElementsAre(kTask0, kTask1));
  // x goes to both devices of task 1, and both their squares come back to task 0.
  EXPECT_EQ(cross_task_sends, 4);
  EXPECT_EQ(recv_tensors, 4);

  // The trace: parses, a row for every device under its task, one flow per cross-task tensor.
  Timeline timeline;
  timeline.AddStep(1, metadata.step_stats(), start, end);
  const weft::testing::ParsedTrace trace = weft::testing::ParseTrace(timeline.ToJson());
  for (const std::string& device : devices) {
    const std::vector<nlohmann::json> events = trace.EventsOnDevice(device);
    ASSERT_FALSE(events.empty()) << device;
    for (const nlohmann::json& event : events) EXPECT_EQ(trace.TaskOf(event), TaskOfDevice(device));
  }
  int cross_task_flows = 0;
  for (const auto& [id, flow] : trace.flows) {
    const auto [src, dst] = KeyEnds(flow.first["args"]["rendezvous_key"].get<std::string>());
    EXPECT_EQ(trace.process_names.at(flow.first["pid"].get<int>()), TaskOfDevice(src));
    EXPECT_EQ(trace.process_names.at(flow.second["pid"].get<int>()), TaskOfDevice(dst));
    if (TaskOfDevice(src) != TaskOfDevice(dst)) ++cross_task_flows;
  }
  EXPECT_EQ(cross_task_flows, cross_task_sends);
  EXPECT_TRUE(session->Close().ok());
}

}  // namespace
}  // namespace weft::cli

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  weft::RegisterGrpcSessionFactory();
  return RUN_ALL_TESTS();
}
