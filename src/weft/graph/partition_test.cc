// Tests of Partition: one GraphDef per device, cut edges replaced by matching _Send/_Recv pairs
// (deduplicated per tensor and destination device), every partition importable on its own.
#include "weft/graph/partition.h"

#include <set>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/framework/rendezvous.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/graph_def_io.h"
#include "weft/ops/register_ops.h"

namespace weft {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kCpu2[] = "/job:localhost/replica:0/task:0/device:CPU:2";
constexpr char kTask1Cpu0[] = "/job:localhost/replica:0/task:1/device:CPU:0";

uint64_t TestIncarnation(const std::string& device) {
  if (device == kCpu0) return 0xa1;
  if (device == kCpu1) return 0xb2;
  return 0xfedcba9876543210ull;  // top bit set: must survive the int64 attr
}

std::string StringAttr(const proto::NodeDef& def, const char* name) {
  std::string value;
  EXPECT_TRUE(GetNodeAttr(def, name, &value).ok()) << name << " missing on " << def.name();
  return value;
}

int64_t IntAttr(const proto::NodeDef& def, const char* name) {
  int64_t value = 0;
  EXPECT_TRUE(GetNodeAttr(def, name, &value).ok()) << name << " missing on " << def.name();
  return value;
}

DataType TypeAttr(const proto::NodeDef& def, const char* name) {
  DataType value = DataType::kInvalid;
  EXPECT_TRUE(GetNodeAttr(def, name, &value).ok()) << name << " missing on " << def.name();
  return value;
}

// The rendezvous key an end of a pair names, as the _Send/_Recv kernels build it from its attrs
// (frame and iteration 0); it must also parse back.
std::string KeyOf(const proto::NodeDef& def) {
  std::string key = Rendezvous::CreateKey(
      StringAttr(def, "send_device"),
      static_cast<uint64_t>(IntAttr(def, "send_device_incarnation")),
      StringAttr(def, "recv_device"), StringAttr(def, "tensor_name"), FrameAndIter{});
  EXPECT_TRUE(Rendezvous::ParseKey(key).ok()) << key;
  return key;
}

class PartitionTest : public ::testing::Test {
 protected:
  PartitionTest() : root_(Scope::NewRootScope()) { options_.get_incarnation = TestIncarnation; }

  static void Place(const Output& output, const std::string& device) {
    output.node()->set_assigned_device_name(device);
  }

  // Partitions root_'s graph, which must build cleanly; on success checks every invariant of the
  // result (see CheckPartitions).
  Status Run() {
    EXPECT_TRUE(root_.ok()) << root_.status();
    Status status = Partition(options_, *root_.graph(), &partitions_);
    if (status.ok()) CheckPartitions();
    return status;
  }

  // Every partition imports on its own, its nodes name its device, and every _Recv has exactly
  // one _Send with the same key on the sending device (and vice versa), of the same dtype.
  void CheckPartitions() {
    std::map<std::string, const proto::NodeDef*> sends_by_key;
    std::set<std::string> tensor_names;
    int recvs = 0;
    for (const auto& [device, graph_def] : partitions_) {
      Graph graph(ops::AllOps());
      Status imported = ImportGraphDef(graph_def, &graph);
      EXPECT_TRUE(imported.ok()) << device << ": " << imported << "\n" << graph_def.DebugString();
      for (const proto::NodeDef& def : graph_def.node()) {
        EXPECT_EQ(def.device(), device) << def.name();
        if (def.op() != "_Send") continue;
        EXPECT_EQ(StringAttr(def, "send_device"), device) << def.name();
        EXPECT_TRUE(sends_by_key.emplace(KeyOf(def), &def).second) << "two sends " << KeyOf(def);
        EXPECT_TRUE(tensor_names.insert(StringAttr(def, "tensor_name")).second)
            << "tensor_name reused: " << def.name();
      }
    }
    for (const auto& [device, graph_def] : partitions_) {
      for (const proto::NodeDef& def : graph_def.node()) {
        if (def.op() != "_Recv") continue;
        ++recvs;
        EXPECT_EQ(StringAttr(def, "recv_device"), device) << def.name();
        bool client_terminated = true;
        EXPECT_TRUE(GetNodeAttr(def, "client_terminated", &client_terminated).ok());
        EXPECT_FALSE(client_terminated) << def.name();
        auto send = sends_by_key.find(KeyOf(def));
        ASSERT_NE(send, sends_by_key.end()) << "no send for " << def.name() << ": " << KeyOf(def);
        EXPECT_EQ(TypeAttr(*send->second, "T"), TypeAttr(def, "tensor_type")) << def.name();
        EXPECT_EQ(static_cast<uint64_t>(IntAttr(def, "send_device_incarnation")),
                  TestIncarnation(StringAttr(def, "send_device")));
      }
    }
    EXPECT_EQ(recvs, static_cast<int>(sends_by_key.size()));
  }

  const proto::NodeDef* Find(const std::string& device, const std::string& name) const {
    auto it = partitions_.find(device);
    if (it == partitions_.end()) return nullptr;
    for (const proto::NodeDef& def : it->second.node()) {
      if (def.name() == name) return &def;
    }
    return nullptr;
  }

  std::vector<const proto::NodeDef*> OfOp(const std::string& device, const std::string& op) const {
    std::vector<const proto::NodeDef*> found;
    auto it = partitions_.find(device);
    if (it == partitions_.end()) return found;
    for (const proto::NodeDef& def : it->second.node()) {
      if (def.op() == op) found.push_back(&def);
    }
    return found;
  }

  static std::vector<std::string> Inputs(const proto::NodeDef* def) {
    return {def->input().begin(), def->input().end()};
  }

  Scope root_;
  PartitionOptions options_;
  std::map<std::string, proto::GraphDef> partitions_;
};

using Strings = std::vector<std::string>;

TEST_F(PartitionTest, SingleDeviceGivesOnePartitionEqualToTheInput) {
  auto x = ops::Placeholder(root_.WithOpName("x"), DataType::kFloat, PartialShape({-1, 3}));
  auto w = ops::Const(root_.WithOpName("w"),
                      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})));
  auto y = ops::Relu(root_.WithOpName("y"), ops::MatMul(root_, x, w));
  ops::NoOp(root_.WithOpName("done").WithControlDependencies({y, x}));
  for (Node* node : root_.graph()->nodes()) node->set_assigned_device_name(kCpu0);

  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(partitions_.size(), 1u);
  const proto::GraphDef& partition = partitions_.at(kCpu0);
  proto::GraphDef expected = root_.graph()->ToGraphDef();
  ASSERT_EQ(partition.node_size(), expected.node_size());
  for (int i = 0; i < expected.node_size(); ++i) {
    expected.mutable_node(i)->set_device(kCpu0);
    EXPECT_TRUE(
        google::protobuf::util::MessageDifferencer::Equals(partition.node(i), expected.node(i)))
        << partition.node(i).DebugString() << " vs " << expected.node(i).DebugString();
  }
  EXPECT_TRUE(OfOp(kCpu0, "_Send").empty());
  EXPECT_TRUE(OfOp(kCpu0, "_Recv").empty());
}

TEST_F(PartitionTest, CrossDeviceEdgeBecomesOneMatchingPair) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("b"), a);
  Place(a, kCpu0);
  Place(b, kCpu1);

  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(partitions_.size(), 2u);
  EXPECT_EQ(partitions_.at(kCpu0).node_size(), 2);
  EXPECT_EQ(partitions_.at(kCpu1).node_size(), 2);
  const proto::NodeDef* send = Find(kCpu0, "a/_send_0_to_CPU_1");
  const proto::NodeDef* recv = Find(kCpu1, "a/_recv_0_on_CPU_1");
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(send->op(), "_Send");
  EXPECT_EQ(recv->op(), "_Recv");
  EXPECT_EQ(Inputs(send), Strings({"a"}));
  EXPECT_TRUE(Inputs(recv).empty());
  EXPECT_EQ(Inputs(Find(kCpu1, "b")), Strings({recv->name()}));
  EXPECT_EQ(Find(kCpu0, "a")->device(), kCpu0);

  EXPECT_EQ(TypeAttr(*send, "T"), DataType::kFloat);
  EXPECT_EQ(TypeAttr(*recv, "tensor_type"), DataType::kFloat);
  for (const proto::NodeDef* end : {send, recv}) {
    EXPECT_EQ(StringAttr(*end, "tensor_name"),
              StrCat("edge_", b.node()->in_edges()[0]->id, "_a_0"));
    EXPECT_EQ(StringAttr(*end, "send_device"), kCpu0);
    EXPECT_EQ(StringAttr(*end, "recv_device"), kCpu1);
    EXPECT_EQ(IntAttr(*end, "send_device_incarnation"), 0xa1);
    bool client_terminated = true;
    EXPECT_TRUE(GetNodeAttr(*end, "client_terminated", &client_terminated).ok());
    EXPECT_FALSE(client_terminated);
  }
}

TEST_F(PartitionTest, RendezvousKeysOfBothEndsAreEqual) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("b"), a);
  Place(a, kCpu2);  // an incarnation with the top bit set
  Place(b, kCpu0);

  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(OfOp(kCpu2, "_Send").size(), 1u);
  ASSERT_EQ(OfOp(kCpu0, "_Recv").size(), 1u);
  std::string send_key = KeyOf(*OfOp(kCpu2, "_Send")[0]);
  EXPECT_EQ(send_key, KeyOf(*OfOp(kCpu0, "_Recv")[0]));
  EXPECT_EQ(send_key, StrCat(kCpu2, ";fedcba9876543210;", kCpu0, ";edge_",
                             b.node()->in_edges()[0]->id, "_a_0;0:0"));
}

TEST_F(PartitionTest, SecondOutputCrossesUnderItsOwnName) {
  auto features = ops::Const(root_.WithOpName("features"),
                             Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
  auto labels = ops::Const(root_.WithOpName("labels"), Tensor::FromVector<int64_t>({0, 1}));
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(root_.WithOpName("xent"), features, labels);
  auto neg = ops::Neg(root_.WithOpName("neg"), xent.backprop);
  for (Node* node : root_.graph()->nodes()) node->set_assigned_device_name(kCpu0);
  Place(neg, kCpu1);

  ASSERT_TRUE(Run().ok());
  const proto::NodeDef* send = Find(kCpu0, "xent/_send_1_to_CPU_1");
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(Inputs(send), Strings({"xent:1"}));
  EXPECT_EQ(StringAttr(*send, "tensor_name"),
            StrCat("edge_", neg.node()->in_edges()[0]->id, "_xent_1"));
  EXPECT_EQ(Inputs(Find(kCpu1, "neg")), Strings({"xent/_recv_1_on_CPU_1"}));
}

TEST_F(PartitionTest, ConsumersOnOneDeviceShareOnePair) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("b"), a);
  auto c = ops::Square(root_.WithOpName("c"), a);
  auto d = ops::Add(root_.WithOpName("d"), a, a);
  Place(a, kCpu0);
  for (const Output& consumer : {b, c, d}) Place(consumer, kCpu1);

  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(OfOp(kCpu0, "_Send").size(), 1u);
  ASSERT_EQ(OfOp(kCpu1, "_Recv").size(), 1u);
  std::string recv = OfOp(kCpu1, "_Recv")[0]->name();
  EXPECT_EQ(Inputs(Find(kCpu1, "b")), Strings({recv}));
  EXPECT_EQ(Inputs(Find(kCpu1, "c")), Strings({recv}));
  EXPECT_EQ(Inputs(Find(kCpu1, "d")), Strings({recv, recv}));
}

TEST_F(PartitionTest, ConsumersOnTwoDevicesGetOnePairEach) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("b"), a);
  auto c = ops::Square(root_.WithOpName("c"), a);
  auto local = ops::Exp(root_.WithOpName("local"), a);
  Place(a, kCpu0);
  Place(local, kCpu0);
  Place(b, kCpu1);
  Place(c, kCpu2);

  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(partitions_.size(), 3u);
  ASSERT_EQ(OfOp(kCpu0, "_Send").size(), 2u);
  EXPECT_NE(Find(kCpu0, "a/_send_0_to_CPU_1"), nullptr);
  EXPECT_NE(Find(kCpu0, "a/_send_0_to_CPU_2"), nullptr);
  EXPECT_EQ(Inputs(Find(kCpu1, "b")), Strings({"a/_recv_0_on_CPU_1"}));
  EXPECT_EQ(Inputs(Find(kCpu2, "c")), Strings({"a/_recv_0_on_CPU_2"}));
  EXPECT_EQ(Inputs(Find(kCpu0, "local")), Strings({"a"}));
  EXPECT_EQ(StringAttr(*Find(kCpu2, "a/_recv_0_on_CPU_2"), "recv_device"), kCpu2);
}

TEST_F(PartitionTest, ControlEdgeBecomesConstSendAndRecvControl) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto n1 = ops::NoOp(root_.WithOpName("n1").WithControlDependencies({a}));
  auto n2 = ops::NoOp(root_.WithOpName("n2").WithControlDependencies({a}));
  Place(a, kCpu0);
  Place(n1, kCpu1);
  Place(n2, kCpu1);

  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(OfOp(kCpu0, "_Send").size(), 1u);
  ASSERT_EQ(OfOp(kCpu1, "_Recv").size(), 1u);
  const proto::NodeDef* trigger = Find(kCpu0, "a/_ctrl_const_to_CPU_1");
  ASSERT_NE(trigger, nullptr);
  EXPECT_EQ(trigger->op(), "Const");
  EXPECT_EQ(Inputs(trigger), Strings({"^a"}));
  Tensor value;
  ASSERT_TRUE(GetNodeAttr(*trigger, "value", &value).ok());
  EXPECT_EQ(value.NumElements(), 0);

  const proto::NodeDef* send = OfOp(kCpu0, "_Send")[0];
  EXPECT_EQ(send->name(), "a/_ctrl_send_to_CPU_1");
  EXPECT_EQ(Inputs(send), Strings({trigger->name()}));
  const proto::NodeDef* recv = OfOp(kCpu1, "_Recv")[0];
  EXPECT_EQ(recv->name(), "a/_ctrl_recv_on_CPU_1");
  EXPECT_EQ(Inputs(Find(kCpu1, "n1")), Strings({"^a/_ctrl_recv_on_CPU_1"}));
  EXPECT_EQ(Inputs(Find(kCpu1, "n2")), Strings({"^a/_ctrl_recv_on_CPU_1"}));
}

TEST_F(PartitionTest, DataAndControlEdgesFromOneNodeCrossSeparately) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("b"), a);
  auto n = ops::NoOp(root_.WithOpName("n").WithControlDependencies({a}));
  Place(a, kCpu0);
  Place(b, kCpu1);
  Place(n, kCpu1);

  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(OfOp(kCpu0, "_Send").size(), 2u);
  EXPECT_EQ(Inputs(Find(kCpu1, "b")), Strings({"a/_recv_0_on_CPU_1"}));
  EXPECT_EQ(Inputs(Find(kCpu1, "n")), Strings({"^a/_ctrl_recv_on_CPU_1"}));
}

TEST_F(PartitionTest, ChainBackAndForthMakesTwoPairsWithDistinctNames) {
  auto a = ops::Const(root_.WithOpName("A"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("B"), a);
  auto c = ops::Square(root_.WithOpName("C"), b);
  Place(a, kCpu0);
  Place(b, kCpu1);
  Place(c, kCpu0);

  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(OfOp(kCpu0, "_Send").size(), 1u);
  ASSERT_EQ(OfOp(kCpu1, "_Send").size(), 1u);
  ASSERT_EQ(OfOp(kCpu0, "_Recv").size(), 1u);
  ASSERT_EQ(OfOp(kCpu1, "_Recv").size(), 1u);
  EXPECT_NE(StringAttr(*OfOp(kCpu0, "_Send")[0], "tensor_name"),
            StringAttr(*OfOp(kCpu1, "_Send")[0], "tensor_name"));
  EXPECT_EQ(Inputs(Find(kCpu1, "B")), Strings({"A/_recv_0_on_CPU_1"}));
  EXPECT_EQ(Inputs(Find(kCpu0, "C")), Strings({"B/_recv_0_on_CPU_0"}));
  EXPECT_EQ(Inputs(Find(kCpu1, "B/_send_0_to_CPU_0")), Strings({"B"}));
}

TEST_F(PartitionTest, KeepsAttrsInputOrderAndControlInputs) {
  auto x = ops::Const(root_.WithOpName("x"), Tensor::FromVector<double>({1, 2}));
  auto y = ops::Const(root_.WithOpName("y"), Tensor::FromVector<double>({3, 4}));
  auto local = ops::NoOp(root_.WithOpName("local"));
  auto remote = ops::NoOp(root_.WithOpName("remote"));
  auto d = ops::Sub(root_.WithOpName("d").WithControlDependencies({remote, local}), x, y);
  Place(x, kCpu1);
  Place(remote, kCpu1);
  Place(y, kCpu0);
  Place(local, kCpu0);
  Place(d, kCpu0);

  ASSERT_TRUE(Run().ok());
  const proto::NodeDef* copy = Find(kCpu0, "d");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(Inputs(copy),
            Strings({"x/_recv_0_on_CPU_0", "y", "^local", "^remote/_ctrl_recv_on_CPU_0"}));
  EXPECT_EQ(copy->op(), "Sub");
  ASSERT_EQ(copy->attr_size(), d.node()->def().attr_size());
  for (const auto& [name, value] : d.node()->def().attr()) {
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(copy->attr().at(name), value))
        << name;
  }
  EXPECT_EQ(TypeAttr(*Find(kCpu0, "x/_recv_0_on_CPU_0"), "tensor_type"), DataType::kDouble);
}

TEST_F(PartitionTest, ResourceHandlesCrossLikeAnyTensor) {
  auto var = ops::VarHandleOp(root_.WithOpName("var"), DataType::kFloat, PartialShape({2}));
  auto read = ops::ReadVariableOp(root_.WithOpName("read"), var);
  Place(var, kCpu0);
  Place(read, kCpu1);

  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(OfOp(kCpu1, "_Recv").size(), 1u);
  EXPECT_EQ(TypeAttr(*OfOp(kCpu1, "_Recv")[0], "tensor_type"), DataType::kResource);
  EXPECT_EQ(TypeAttr(*OfOp(kCpu0, "_Send")[0], "T"), DataType::kResource);
  EXPECT_EQ(Inputs(Find(kCpu1, "read")), Strings({"var/_recv_0_on_CPU_1"}));
}

TEST_F(PartitionTest, UnassignedNodeIsAnErrorNamingIt) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  ops::Neg(root_.WithOpName("lost_node"), a);
  Place(a, kCpu0);
  partitions_[kCpu0];  // stale content must not survive a failure

  Status status = Run();
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("lost_node"), std::string::npos) << status;
  EXPECT_NE(status.message().find("Neg"), std::string::npos) << status;
  EXPECT_TRUE(partitions_.empty());
}

TEST_F(PartitionTest, MissingIncarnationIsAnErrorOnlyWhenAnEdgeCrosses) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("b"), a);
  Place(a, kCpu0);
  Place(b, kCpu0);
  options_.get_incarnation = nullptr;
  EXPECT_TRUE(Run().ok());

  Place(b, kCpu1);
  Status status = Run();
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("get_incarnation"), std::string::npos) << status;
  EXPECT_NE(status.message().find("'b'"), std::string::npos) << status;
  EXPECT_TRUE(partitions_.empty());
}

TEST_F(PartitionTest, IncompleteGraphIsAnErrorNamingTheNode) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("b"), a);
  Place(a, kCpu0);
  Place(b, kCpu0);
  root_.graph()->RemoveEdge(b.node()->in_edges()[0]);

  Status status = Run();
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("'b'"), std::string::npos) << status;
  EXPECT_NE(status.message().find("missing 1"), std::string::npos) << status;
}

TEST_F(PartitionTest, GeneratedNamesAvoidTakenNames) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto squatter = ops::Identity(root_.WithOpName("a/_send_0_to_CPU_1"), a);
  auto b = ops::Neg(root_.WithOpName("b"), a);
  ASSERT_EQ(squatter.node()->name(), "a/_send_0_to_CPU_1");
  Place(a, kCpu0);
  Place(squatter, kCpu0);
  Place(b, kCpu1);

  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(OfOp(kCpu0, "_Send").size(), 1u);
  EXPECT_EQ(OfOp(kCpu0, "_Send")[0]->name(), "a/_send_0_to_CPU_1_1");
  EXPECT_EQ(Find(kCpu0, "a/_send_0_to_CPU_1")->op(), "Identity");
}

TEST_F(PartitionTest, DevicesOfOneTypeOnTwoTasksAreNamedInFull) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("b"), a);
  Place(a, kCpu0);
  Place(b, kTask1Cpu0);

  ASSERT_TRUE(Run().ok());
  EXPECT_NE(Find(kCpu0, "a/_send_0_to_job_localhost_replica_0_task_1_device_CPU_0"), nullptr);
  EXPECT_NE(Find(kTask1Cpu0, "a/_recv_0_on_job_localhost_replica_0_task_1_device_CPU_0"), nullptr);
}

TEST_F(PartitionTest, EdgeNamePrefixStartsEveryTensorName) {
  auto a = ops::Const(root_.WithOpName("a"), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Neg(root_.WithOpName("b"), a);
  auto n = ops::NoOp(root_.WithOpName("n").WithControlDependencies({b}));
  Place(a, kCpu0);
  Place(b, kCpu1);
  Place(n, kCpu0);
  options_.edge_name_prefix = "step7";

  ASSERT_TRUE(Run().ok());
  for (const auto& [device, graph_def] : partitions_) {
    for (const proto::NodeDef& def : graph_def.node()) {
      if (def.op() != "_Send" && def.op() != "_Recv") continue;
      EXPECT_EQ(StringAttr(def, "tensor_name").rfind("step7_", 0), 0u) << def.name();
    }
  }
  EXPECT_EQ(OfOp(kCpu1, "_Send").size(), 1u);
  EXPECT_EQ(Inputs(Find(kCpu0, "n")), Strings({"^b/_ctrl_recv_on_CPU_0"}));
}

}  // namespace
}  // namespace weft
