// Tests of EnsureMemoryTypes: pairs where an edge joins host and device memory on one device, none
// where both ends agree, shared pairs per tensor, and the partitioner's ends switched to their host
// forms.
#include "weft/graph/memory_types.h"

#include <map>

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/graph_def_io.h"
#include "weft/ops/register_ops.h"

namespace weft {
namespace {

constexpr char kDevice[] = "/job:localhost/replica:0/task:0/device:TEST_ARENA:0";

// The partitioner's ends, as Partition writes them.
proto::NodeDef End(const std::string& name, const std::string& op, const std::string& input,
                   DataType dtype) {
  proto::NodeDef def;
  def.set_name(name);
  def.set_op(op);
  def.set_device(kDevice);
  if (!input.empty()) def.add_input(input);
  auto& attr = *def.mutable_attr();
  attr[op == "_Send" ? "T" : "tensor_type"] = MakeAttrValue(dtype);
  attr["tensor_name"] = MakeAttrValue("edge_" + name);
  attr["send_device"] = MakeAttrValue(kDevice);
  attr["send_device_incarnation"] = MakeAttrValue(int64_t{7});
  attr["recv_device"] = MakeAttrValue(kDevice);
  attr["client_terminated"] = MakeAttrValue(false);
  return def;
}

std::map<std::string, proto::NodeDef> ByName(const proto::GraphDef& graph) {
  std::map<std::string, proto::NodeDef> nodes;
  for (const proto::NodeDef& node : graph.node()) nodes[node.name()] = node;
  return nodes;
}

TEST(MemoryTypesTest, PairsJoinHostAndDeviceMemoryAndNothingElse) {
  Scope root = Scope::NewRootScope().WithDevice(kDevice);
  auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<float>({1, 2, 3, 4}));
  auto shape = ops::Shape(root.WithOpName("shape"), x);             // host output
  ops::Reshape(root.WithOpName("same_memory"), x, shape);           // host input: as is
  ops::Cast(root.WithOpName("to_float"), shape, DataType::kFloat);  // device input
  auto dims = ops::Const(root.WithOpName("dims"), Tensor::FromVector<int32_t>({2, 2}));
  ops::Reshape(root.WithOpName("square"), x, dims);        // device -> host
  ops::Reshape(root.WithOpName("square_again"), x, dims);  // shares the pair
  proto::GraphDef graph = root.ToGraphDef().value();
  *graph.add_node() = End("shape_out", "_Send", "shape", DataType::kInt32);
  *graph.add_node() = End("shape_in", "_Recv", "", DataType::kInt32);
  proto::NodeDef* reshaped = graph.add_node();
  reshaped->set_name("reshaped_by_received");
  reshaped->set_op("Reshape");
  reshaped->add_input("x");
  reshaped->add_input("shape_in");
  (*reshaped->mutable_attr())["T"] = MakeAttrValue(DataType::kFloat);
  (*reshaped->mutable_attr())["Tshape"] = MakeAttrValue(DataType::kInt32);

  ASSERT_TRUE(EnsureMemoryTypes(ops::AllOps(), kDevice, 7, &graph).ok());
  auto nodes = ByName(graph);
  EXPECT_EQ(nodes["same_memory"].input(1), "shape");
  // Host -> device: a _HostSend and a _Recv (which copies through the device context).
  const std::string& to_device = nodes["to_float"].input(0);
  EXPECT_EQ(nodes[to_device].op(), "_Recv");
  const std::string& host_send = nodes["shape/_memory_send_0_to_device"].op();
  EXPECT_EQ(host_send, "_HostSend");
  // Device -> host: a _Send and a _HostRecv, shared by both consumers.
  const std::string& to_host = nodes["square"].input(1);
  EXPECT_EQ(nodes[to_host].op(), "_HostRecv");
  EXPECT_EQ(nodes["square_again"].input(1), to_host);
  EXPECT_EQ(nodes["dims/_memory_send_0_to_host"].op(), "_Send");
  // The partitioner's ends take their host forms instead of a second pair.
  EXPECT_EQ(nodes["shape_out"].op(), "_HostSend");
  EXPECT_EQ(nodes["shape_out"].input(0), "shape");
  EXPECT_EQ(nodes["shape_in"].op(), "_HostRecv");
  EXPECT_EQ(nodes["reshaped_by_received"].input(1), "shape_in");
  EXPECT_EQ(graph.node_size(), 14);  // 10 given + 2 pairs

  // Both ends of a pair name the same key, and the result imports.
  std::string send_name, recv_name;
  GetNodeAttr(nodes["dims/_memory_send_0_to_host"], "tensor_name", &send_name).IgnoreError();
  GetNodeAttr(nodes[to_host], "tensor_name", &recv_name).IgnoreError();
  EXPECT_EQ(send_name, recv_name);
  Graph imported(ops::AllOps());
  Status s = ImportGraphDef(graph, &imported);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(MemoryTypesTest, BadInputsNameTheNodeAndLeaveThePartitionAlone) {
  Scope root = Scope::NewRootScope().WithDevice(kDevice);
  ops::Const(root.WithOpName("x"), 1.0f);
  proto::GraphDef graph = root.ToGraphDef().value();
  proto::NodeDef* bad = graph.add_node();
  bad->set_name("neg");
  bad->set_op("Neg");
  bad->add_input("missing");
  (*bad->mutable_attr())["T"] = MakeAttrValue(DataType::kFloat);
  const proto::GraphDef before = graph;
  Status s = EnsureMemoryTypes(ops::AllOps(), kDevice, 7, &graph);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("neg"), std::string::npos) << s;
  EXPECT_NE(s.message().find("missing"), std::string::npos) << s;
  EXPECT_EQ(graph.node_size(), before.node_size());
}

}  // namespace
}  // namespace weft
