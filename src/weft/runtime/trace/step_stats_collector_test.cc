// StepStatsCollector and what a traced DirectSession step records beyond times: each device under
// its task, _Send/_Recv with their bytes, peer and the rendezvous key both ends share, and
// collective kernels with their bytes and their instance's other devices as peers.
#include "weft/runtime/trace/step_stats_collector.h"

#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"
#include "weft/runtime/session.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

TEST(TaskOfDeviceTest, CutsTheNameAfterTheTask) {
  EXPECT_EQ(TaskOfDevice("/job:worker/replica:0/task:12/device:CPU:0"),
            "/job:worker/replica:0/task:12");
  EXPECT_EQ(TaskOfDevice("/job:worker/replica:0/task:1/master"), "/job:worker/replica:0/task:1");
  EXPECT_EQ(TaskOfDevice("/job:worker/replica:0/task:3"), "/job:worker/replica:0/task:3");
  EXPECT_EQ(TaskOfDevice("CPU:0"), "CPU:0");
}

TEST(StepStatsCollectorTest, FinalizeSetsTasksAndCollectivePeers) {
  StepStatsCollector collector;
  auto member = [](int64_t instance) {
    proto::NodeExecStats stats;
    stats.set_op("CollectiveAllReduce");
    stats.set_kind(proto::NodeExecStats::COLLECTIVE);
    stats.set_collective_group_key(1);
    stats.set_collective_instance_key(instance);
    return stats;
  };
  collector.Save(kCpu0, member(7));
  collector.Save(kCpu1, member(7));
  collector.Save(kCpu1, member(8));  // the only member here of an instance across tasks
  collector.Save(kCpu1, member(9));  // an instance of one member: no peer
  proto::NodeExecStats across = member(8);
  across.add_peers("/job:worker/replica:0/task:1");
  collector.Save(kCpu1, across);
  proto::StepStats stats;
  collector.Finalize(&stats);
  ASSERT_EQ(stats.dev_stats_size(), 2);
  EXPECT_EQ(stats.dev_stats(0).device(), kCpu0);
  EXPECT_EQ(stats.dev_stats(0).task(), "/job:localhost/replica:0/task:0");
  EXPECT_THAT(stats.dev_stats(0).node_stats(0).peers(), ElementsAre(kCpu1));
  EXPECT_THAT(stats.dev_stats(1).node_stats(0).peers(), ElementsAre(kCpu0));
  EXPECT_THAT(stats.dev_stats(1).node_stats(1).peers(),
              ElementsAre("/job:worker/replica:0/task:1"));
  EXPECT_EQ(stats.dev_stats(1).node_stats(2).peers_size(), 0);
  EXPECT_THAT(stats.dev_stats(1).node_stats(3).peers(),
              ElementsAre("/job:worker/replica:0/task:1"));
}

std::unique_ptr<Session> TwoDeviceSession(const proto::GraphDef& graph) {
  SessionOptions options;
  (*options.config.mutable_device_count())["CPU"] = 2;
  options.config.set_operation_timeout_in_ms(20'000);
  StatusOr<std::unique_ptr<Session>> session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return nullptr;
  Status created = (*session)->Create(graph);
  EXPECT_TRUE(created.ok()) << created;
  return std::move(session).value();
}

proto::StepStats TracedRun(Session* session, const std::vector<std::string>& fetches) {
  proto::RunOptions trace;
  trace.set_trace_level(proto::RunOptions::FULL_TRACE);
  proto::RunMetadata metadata;
  std::vector<Tensor> outputs;
  Status status = session->Run(trace, {}, fetches, {}, &outputs, &metadata);
  EXPECT_TRUE(status.ok()) << status;
  return metadata.step_stats();
}

TEST(TracedStepTest, SendAndRecvShareTheirKeyAndCountTheirBytes) {
  Scope root = Scope::NewRootScope().WithDevice(kCpu0);
  auto x = ops::Const(root.WithOpName("x"),
                      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})));
  auto y = ops::Neg(root.WithOpName("y").WithDevice(kCpu1), x);
  auto session = TwoDeviceSession(root.ToGraphDef().value());
  ASSERT_NE(session, nullptr);
  const proto::StepStats stats = TracedRun(session.get(), {y.name()});

  std::map<std::string, const proto::NodeExecStats*> sends, recvs;
  for (const proto::DeviceStepStats& device : stats.dev_stats()) {
    EXPECT_EQ(device.task(), "/job:localhost/replica:0/task:0");
    for (const proto::NodeExecStats& node : device.node_stats()) {
      if (node.kind() == proto::NodeExecStats::SEND) {
        EXPECT_EQ(device.device(), kCpu0);
        sends[node.rendezvous_key()] = &node;
      } else if (node.kind() == proto::NodeExecStats::RECV) {
        EXPECT_EQ(device.device(), kCpu1);
        recvs[node.rendezvous_key()] = &node;
      } else if (node.op() == "Neg") {
        EXPECT_EQ(node.output_bytes(), 24);
      }
    }
  }
  ASSERT_EQ(sends.size(), 1u);
  ASSERT_EQ(recvs.size(), 1u);
  const auto& [key, send] = *sends.begin();
  EXPECT_THAT(key, ::testing::StartsWith(kCpu0));
  ASSERT_TRUE(recvs.count(key)) << key;
  const proto::NodeExecStats& recv = *recvs[key];
  EXPECT_EQ(send->transfer_bytes(), 24);
  EXPECT_EQ(recv.transfer_bytes(), 24);
  EXPECT_THAT(send->peers(), ElementsAre(kCpu1));
  EXPECT_THAT(recv.peers(), ElementsAre(kCpu0));
  EXPECT_THAT(send->timeline_label(), ::testing::HasSubstr("24 bytes"));
}

TEST(TracedStepTest, CollectiveMembersNameEachOtherAndTheirBytes) {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> fetches;
  for (int replica = 0; replica < 2; ++replica) {
    Scope device = root.WithDevice(replica == 0 ? kCpu0 : kCpu1);
    auto value = ops::Const(device.WithOpName("value" + std::to_string(replica)), {1.0f, 2.0f});
    auto reduced = ops::CollectiveAllReduce(device.WithOpName("sum" + std::to_string(replica)),
                                            {value}, {.group_size = 2, .instance_key = 3});
    fetches.push_back(reduced[0].name());
  }
  auto session = TwoDeviceSession(root.ToGraphDef().value());
  ASSERT_NE(session, nullptr);
  const proto::StepStats stats = TracedRun(session.get(), fetches);
  std::map<std::string, std::vector<std::string>> peers;
  for (const proto::DeviceStepStats& device : stats.dev_stats()) {
    for (const proto::NodeExecStats& node : device.node_stats()) {
      if (node.kind() != proto::NodeExecStats::COLLECTIVE) continue;
      EXPECT_EQ(node.transfer_bytes(), 8);
      EXPECT_EQ(node.collective_instance_key(), 3);
      peers[device.device()].assign(node.peers().begin(), node.peers().end());
    }
  }
  EXPECT_THAT(peers, UnorderedElementsAre(std::make_pair(kCpu0, std::vector<std::string>{kCpu1}),
                                          std::make_pair(kCpu1, std::vector<std::string>{kCpu0})));
}

TEST(TracedStepTest, AnUntracedStepRecordsNothing) {
  Scope root = Scope::NewRootScope().WithDevice(kCpu0);
  auto y = ops::Neg(root.WithOpName("y").WithDevice(kCpu1), ops::Const(root, 1.0f));
  auto session = TwoDeviceSession(root.ToGraphDef().value());
  ASSERT_NE(session, nullptr);
  proto::RunMetadata metadata;
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run(proto::RunOptions(), {}, {y.name()}, {}, &outputs, &metadata).ok());
  EXPECT_EQ(metadata.step_stats().dev_stats_size(), 0);
}

}  // namespace
}  // namespace weft
