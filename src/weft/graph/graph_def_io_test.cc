#include "weft/graph/graph_def_io.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/ops/register_ops.h"

namespace weft {
namespace {

proto::NodeDef* AddDef(proto::GraphDef* graph, const std::string& name, const std::string& op,
                       std::vector<std::string> inputs = {},
                       std::map<std::string, proto::AttrValue> attrs = {}) {
  proto::NodeDef* def = graph->add_node();
  def->set_name(name);
  def->set_op(op);
  for (auto& input : inputs) def->add_input(input);
  for (auto& [key, value] : attrs) (*def->mutable_attr())[key] = value;
  return def;
}

proto::GraphDef SmallGraph() {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, PartialShape({-1, 3}));
  auto w = ops::Const(root.WithOpName("w"),
                      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2})));
  auto y = ops::Relu(root.WithOpName("y"), ops::MatMul(root, x, w));
  ops::NoOp(root.WithOpName("done").WithControlDependencies({y}));
  return root.ToGraphDef().value();
}

Status Import(const proto::GraphDef& def) {
  Graph graph(ops::AllOps());
  return ImportGraphDef(def, &graph);
}

TEST(ImportGraphDefTest, RoundTripsThroughExport) {
  proto::GraphDef def = SmallGraph();
  Graph graph(ops::AllOps());
  ASSERT_TRUE(ImportGraphDef(def, &graph).ok());
  proto::GraphDef exported = graph.ToGraphDef();
  ASSERT_EQ(exported.node_size(), def.node_size());
  for (int i = 0; i < def.node_size(); ++i) {
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(exported.node(i), def.node(i)))
        << def.node(i).DebugString() << " vs " << exported.node(i).DebugString();
  }
  EXPECT_EQ(graph.FindNode("y")->output_shape(0), PartialShape({-1, 2}));
}

TEST(ImportGraphDefTest, AcceptsNodesInAnyOrder) {
  proto::GraphDef def = SmallGraph();
  proto::GraphDef reversed;
  for (int i = def.node_size() - 1; i >= 0; --i) *reversed.add_node() = def.node(i);
  EXPECT_TRUE(Import(reversed).ok());
}

TEST(ImportGraphDefTest, ReportsACycleNamingItsNodes) {
  proto::GraphDef def;
  AddDef(&def, "a", "Identity", {"c"}, {{"T", MakeAttrValue(DataType::kFloat)}});
  AddDef(&def, "b", "Identity", {"a"}, {{"T", MakeAttrValue(DataType::kFloat)}});
  AddDef(&def, "c", "Identity", {"b"}, {{"T", MakeAttrValue(DataType::kFloat)}});
  Status s = Import(def);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("cycle"), std::string::npos) << s;
  for (const char* name : {"a", "b", "c"}) EXPECT_NE(s.message().find(name), std::string::npos);
}

TEST(ImportGraphDefTest, ReportsBadNodesByName) {
  proto::GraphDef unknown_op;
  AddDef(&unknown_op, "mystery", "Frobnicate");
  Status s = Import(unknown_op);
  EXPECT_TRUE(IsNotFound(s));
  EXPECT_NE(s.message().find("mystery"), std::string::npos);
  EXPECT_NE(s.message().find("Frobnicate"), std::string::npos);

  proto::GraphDef missing_attr;
  AddDef(&missing_attr, "p", "Placeholder");
  s = Import(missing_attr);
  EXPECT_NE(s.message().find("node 'p' (Placeholder): missing attr 'dtype'"), std::string::npos)
      << s;

  proto::GraphDef wrong_attr_type;
  AddDef(&wrong_attr_type, "p", "Placeholder", {}, {{"dtype", MakeAttrValue(3.5f)}});
  s = Import(wrong_attr_type);
  EXPECT_NE(s.message().find("attr 'dtype' should be type, but is float"), std::string::npos) << s;

  proto::GraphDef bad_dtype;
  AddDef(&bad_dtype, "p", "Placeholder", {}, {{"dtype", MakeAttrValue(DataType::kBool)}});
  AddDef(&bad_dtype, "r", "Relu", {"p"}, {{"T", MakeAttrValue(DataType::kBool)}});
  s = Import(bad_dtype);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("node 'r' (Relu)"), std::string::npos) << s;

  proto::GraphDef dangling;
  AddDef(&dangling, "r", "Relu", {"nowhere"}, {{"T", MakeAttrValue(DataType::kFloat)}});
  s = Import(dangling);
  EXPECT_NE(s.message().find("input 'nowhere' names no node"), std::string::npos) << s;

  proto::GraphDef duplicate;
  AddDef(&duplicate, "p", "Placeholder", {}, {{"dtype", MakeAttrValue(DataType::kFloat)}});
  AddDef(&duplicate, "p", "Placeholder", {}, {{"dtype", MakeAttrValue(DataType::kFloat)}});
  s = Import(duplicate);
  EXPECT_NE(s.message().find("duplicate node name 'p'"), std::string::npos) << s;

  proto::GraphDef bad_output;
  AddDef(&bad_output, "p", "Placeholder", {}, {{"dtype", MakeAttrValue(DataType::kFloat)}});
  AddDef(&bad_output, "r", "Relu", {"p:3"}, {{"T", MakeAttrValue(DataType::kFloat)}});
  s = Import(bad_output);
  EXPECT_NE(s.message().find("names output 3 of node 'p'"), std::string::npos) << s;
}

TEST(ImportGraphDefTest, MatMulShapeMismatchIsReported) {
  proto::GraphDef def;
  AddDef(
      &def, "a", "Placeholder", {},
      {{"dtype", MakeAttrValue(DataType::kFloat)}, {"shape", MakeAttrValue(PartialShape({3, 4}))}});
  AddDef(
      &def, "b", "Placeholder", {},
      {{"dtype", MakeAttrValue(DataType::kFloat)}, {"shape", MakeAttrValue(PartialShape({5, 6}))}});
  AddDef(&def, "mm", "MatMul", {"a", "b"}, {{"T", MakeAttrValue(DataType::kFloat)}});
  Status s = Import(def);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("node 'mm' (MatMul)"), std::string::npos) << s;
}

TEST(ParseGraphDefTest, GarbageBytesAreRefused) {
  std::string garbage = "\xff\xff\xff\xff this is not a protobuf";
  auto parsed = ParseGraphDef(garbage);
  EXPECT_TRUE(IsInvalidArgument(parsed.status()));
  std::string good = SmallGraph().SerializeAsString();
  EXPECT_TRUE(ParseGraphDef(good).ok());
  // Truncated bytes of a real graph are refused, or parse into a graph import can judge.
  auto truncated = ParseGraphDef(std::string_view(good).substr(0, good.size() / 2));
  if (truncated.ok()) {
    EXPECT_FALSE(Import(*truncated).ok());
  }
}

}  // namespace
}  // namespace weft
