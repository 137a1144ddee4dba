#include "weft/distributed/master/master_client_graph.h"

#include <gtest/gtest.h>

#include "weft/distributed/master/master_calls.h"
#include "weft/framework/tensor_proto_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/graph_def_io.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"

namespace weft {
namespace {

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";

std::vector<proto::DeviceAttributes> TwoTasks() {
  std::vector<proto::DeviceAttributes> devices(2);
  devices[0].set_name(std::string(kTask0) + "/device:CPU:0");
  devices[1].set_name(std::string(kTask1) + "/device:CPU:0");
  for (int i = 0; i < 2; ++i) {
    devices[i].set_device_type("CPU");
    devices[i].set_incarnation(100 + i);
  }
  return devices;
}

std::unique_ptr<Graph> Import(const proto::GraphDef& graph_def) {
  auto graph = std::make_unique<Graph>(ops::AllOps());
  Status s = ImportGraphDef(graph_def, graph.get());
  EXPECT_TRUE(s.ok()) << s;
  return graph;
}

TEST(MasterClientGraphTest, GroupsPartitionsByTaskAndRenumbersArgsAndRetvals) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root.WithOpName("a"), DataType::kFloat);
  auto b = ops::Placeholder(root.WithOpName("b").WithDevice(kTask1), DataType::kFloat);
  ops::Neg(root.WithOpName("neg_b").WithDevice(kTask1), b);
  ops::Add(root.WithOpName("sum").WithDevice(kTask1), a, b);
  ops::Neg(root.WithOpName("neg_a"), a);
  auto graph = Import(root.ToGraphDef().value());
  StepSignature signature{{"a", "b"}, {"neg_a", "neg_b", "sum"}, {}};
  auto client_graph = BuildClientGraph(*graph, signature, TwoTasks(), &kernels::AllKernels(), {});
  ASSERT_TRUE(client_graph.ok()) << client_graph.status();
  ASSERT_EQ(client_graph->tasks.size(), 2u);
  const auto& task0 = client_graph->tasks[0].registration;
  const auto& task1 = client_graph->tasks[1].registration;
  EXPECT_EQ(client_graph->tasks[1].task, kTask1);
  EXPECT_EQ(std::vector<std::string>(task0.feed().begin(), task0.feed().end()),
            std::vector<std::string>{"a"});
  EXPECT_EQ(std::vector<std::string>(task0.fetch().begin(), task0.fetch().end()),
            std::vector<std::string>{"neg_a"});
  EXPECT_EQ(std::vector<std::string>(task1.feed().begin(), task1.feed().end()),
            std::vector<std::string>{"b"});
  EXPECT_EQ(task1.fetch_size(), 2);
  // Task 1's _Arg and _Retval indices restart from 0.
  for (const auto& node : task1.partition(0).graph_def().node()) {
    if (node.op() != "_Arg" && node.op() != "_Retval") continue;
    EXPECT_LT(node.attr().at("index").i(), node.op() == "_Arg" ? 1 : 2) << node.name();
  }
  ASSERT_EQ(client_graph->feeds.size(), 2u);
  EXPECT_EQ(client_graph->feeds[1].name, "b");
  EXPECT_EQ(client_graph->feeds[1].dtype, DataType::kFloat);
}

TEST(MasterClientGraphTest, CheckFeedReadsOnlyTheHeaderAndNamesTheFeed) {
  FeedSpec spec{"x", DataType::kFloat, PartialShape({-1, 2})};
  proto::NamedTensorProto feed;
  feed.set_name("x");
  *feed.mutable_tensor() = ToProto(Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
  EXPECT_TRUE(CheckFeed(feed, spec).ok());
  *feed.mutable_tensor() = ToProto(Tensor::FromVector<float>({1, 2, 3}, TensorShape({3})));
  Status s = CheckFeed(feed, spec);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s;
  *feed.mutable_tensor() = ToProto(Tensor::FromVector<float>({1, 2}, TensorShape({1, 2})));
  feed.mutable_tensor()->mutable_tensor_content()->resize(3);
  EXPECT_TRUE(IsInvalidArgument(CheckFeed(feed, spec)));
  feed.mutable_tensor()->set_dtype(static_cast<proto::DataType>(999));
  EXPECT_TRUE(IsInvalidArgument(CheckFeed(feed, spec)));
}

TEST(MasterCallsTest, FromWorkerKeepsTheCodeAndNamesTheTask) {
  Status s = FromWorker(InvalidArgument("bad"), kTask1);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_EQ(s.message(), std::string("bad (from worker ") + kTask1 + ")");
}

TEST(MasterCallsTest, CallEveryTaskGivesUpOnSilentCallsAfterTheTimeout) {
  std::vector<StatusCallback> silent;
  std::vector<Status> statuses = CallEveryTask(
      2,
      [&](size_t i, StatusCallback done) {
        if (i == 0) return done(Status::OK());
        silent.push_back(std::move(done));
      },
      50);
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_TRUE(IsDeadlineExceeded(statuses[1])) << statuses[1];
  silent[0](Status::OK());  // a late answer is harmless
}

}  // namespace
}  // namespace weft
