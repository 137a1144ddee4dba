#include "weft/graph/graph.h"

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/ops/register_ops.h"

namespace weft {
namespace {

proto::NodeDef Def(const std::string& name, const std::string& op,
                   std::map<std::string, proto::AttrValue> attrs = {}) {
  proto::NodeDef def;
  def.set_name(name);
  def.set_op(op);
  for (auto& [key, value] : attrs) (*def.mutable_attr())[key] = value;
  return def;
}

class GraphTest : public ::testing::Test {
 protected:
  GraphTest() : graph_(ops::AllOps()) {}
  Node* Placeholder(const std::string& name, DataType type, PartialShape shape) {
    auto node = graph_.AddNode(
        Def(name, "Placeholder", {{"dtype", MakeAttrValue(type)}, {"shape", MakeAttrValue(shape)}}),
        {});
    EXPECT_TRUE(node.ok()) << node.status();
    return *node;
  }
  Graph graph_;
};

TEST_F(GraphTest, AddNodeFillsDefaultsTypesAndShapes) {
  Node* a = Placeholder("a", DataType::kFloat, PartialShape({-1, 4}));
  Node* b = Placeholder("b", DataType::kFloat, PartialShape({4, 6}));
  auto mm = graph_.AddNode(Def("mm", "MatMul"), {{a, 0}, {b, 0}});
  ASSERT_FALSE(mm.ok());  // T is not set on the NodeDef
  auto product = graph_.AddNode(Def("mm", "MatMul", {{"T", MakeAttrValue(DataType::kFloat)}}),
                                {{a, 0}, {b, 0}});
  ASSERT_TRUE(product.ok()) << product.status();
  EXPECT_FALSE((*product)->def().attr().at("transpose_a").b());
  EXPECT_EQ((*product)->output_type(0), DataType::kFloat);
  EXPECT_EQ((*product)->output_shape(0), PartialShape({-1, 6}));
  EXPECT_EQ((*product)->in_edges().size(), 2u);
  EXPECT_EQ(a->out_edges().size(), 1u);
}

TEST_F(GraphTest, ShapesFlowThroughShapeIntoReshapeAndFill) {
  // Shape(x)'s values are x's dims: a Reshape or Fill to them has x's known dims even though the
  // values exist only at run time (the reference's input_tensors_as_shapes).
  Node* x = Placeholder("x", DataType::kFloat, PartialShape({-1, 128, 256}));
  Node* g = Placeholder("g", DataType::kFloat, PartialShape::UnknownRank());
  auto shape =
      graph_.AddNode(Def("shape", "Shape", {{"T", MakeAttrValue(DataType::kFloat)}}), {{x, 0}});
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ((*shape)->output_as_shape(), PartialShape({-1, 128, 256}));
  EXPECT_FALSE(x->output_as_shape().rank_known());
  auto reshaped = graph_.AddNode(
      Def("reshaped", "Reshape", {{"T", MakeAttrValue(DataType::kFloat)}}), {{g, 0}, {*shape, 0}});
  ASSERT_TRUE(reshaped.ok()) << reshaped.status();
  EXPECT_EQ((*reshaped)->output_shape(0), PartialShape({-1, 128, 256}));
  Node* zero = Placeholder("zero", DataType::kFloat, PartialShape({}));
  auto filled = graph_.AddNode(Def("filled", "Fill", {{"T", MakeAttrValue(DataType::kFloat)}}),
                               {{*shape, 0}, {zero, 0}});
  ASSERT_TRUE(filled.ok()) << filled.status();
  EXPECT_EQ((*filled)->output_shape(0), PartialShape({-1, 128, 256}));
  // A shape input that is not a Shape's output still gives only the rank.
  Node* dims = Placeholder("dims", DataType::kInt32, PartialShape({3}));
  auto unknown = graph_.AddNode(Def("unknown", "Reshape", {{"T", MakeAttrValue(DataType::kFloat)}}),
                                {{g, 0}, {dims, 0}});
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ((*unknown)->output_shape(0), PartialShape({-1, -1, -1}));
}

TEST_F(GraphTest, ShapeMismatchIsCaughtWhenTheNodeIsAdded) {
  Node* a = Placeholder("a", DataType::kFloat, PartialShape({3, 4}));
  Node* b = Placeholder("b", DataType::kFloat, PartialShape({5, 6}));
  auto mm = graph_.AddNode(Def("mm", "MatMul", {{"T", MakeAttrValue(DataType::kFloat)}}),
                           {{a, 0}, {b, 0}});
  ASSERT_FALSE(mm.ok());
  EXPECT_TRUE(IsInvalidArgument(mm.status()));
  EXPECT_NE(mm.status().message().find("node 'mm' (MatMul)"), std::string::npos) << mm.status();
  EXPECT_NE(mm.status().message().find("4"), std::string::npos);
  EXPECT_EQ(graph_.FindNode("mm"), nullptr);  // the graph is unchanged
}

TEST_F(GraphTest, InputDtypeMustMatchTheOp) {
  Node* a = Placeholder("a", DataType::kInt32, PartialShape({2}));
  Node* b = Placeholder("b", DataType::kFloat, PartialShape({2}));
  auto add =
      graph_.AddNode(Def("add", "Add", {{"T", MakeAttrValue(DataType::kFloat)}}), {{a, 0}, {b, 0}});
  ASSERT_FALSE(add.ok());
  EXPECT_NE(add.status().message().find("input 0 ('a') is int32"), std::string::npos)
      << add.status();
}

TEST_F(GraphTest, UnknownOpAndDuplicateNamesAreRefused) {
  auto unknown = graph_.AddNode(Def("x", "Frobnicate"), {});
  EXPECT_TRUE(IsNotFound(unknown.status()));
  EXPECT_NE(unknown.status().message().find("'Frobnicate'"), std::string::npos);
  Placeholder("p", DataType::kFloat, PartialShape());
  auto again =
      graph_.AddNode(Def("p", "Placeholder", {{"dtype", MakeAttrValue(DataType::kFloat)}}), {});
  EXPECT_NE(again.status().message().find("duplicate node name 'p'"), std::string::npos);
}

TEST_F(GraphTest, RemoveNodeDropsItsEdges) {
  Node* a = Placeholder("a", DataType::kFloat, PartialShape({2}));
  auto id = graph_.AddNode(Def("id", "Identity"), {{a, 0}});
  ASSERT_FALSE(id.ok());  // T missing: Identity needs it
  auto identity =
      graph_.AddNode(Def("id", "Identity", {{"T", MakeAttrValue(DataType::kFloat)}}), {{a, 0}});
  ASSERT_TRUE(identity.ok());
  graph_.RemoveNode(*identity);
  EXPECT_TRUE(a->out_edges().empty());
  EXPECT_EQ(graph_.num_nodes(), 1);
  EXPECT_EQ(graph_.FindNode("id"), nullptr);
}

TEST_F(GraphTest, ReplaceInputRepointsOneDataInput) {
  Node* a = Placeholder("a", DataType::kFloat, PartialShape({2}));
  Node* b = Placeholder("b", DataType::kFloat, PartialShape({2}));
  Node* i = Placeholder("i", DataType::kInt32, PartialShape({2}));
  auto add =
      graph_.AddNode(Def("add", "Add", {{"T", MakeAttrValue(DataType::kFloat)}}), {{a, 0}, {a, 0}});
  ASSERT_TRUE(add.ok()) << add.status();
  ASSERT_TRUE(graph_.ReplaceInput(*add, 1, {b, 0}).ok());
  EXPECT_EQ((*add)->input_edge(0)->src, a);
  EXPECT_EQ((*add)->input_edge(1)->src, b);
  EXPECT_EQ(a->out_edges().size(), 1u);
  EXPECT_EQ(b->out_edges().size(), 1u);
  Status wrong_type = graph_.ReplaceInput(*add, 0, {i, 0});
  EXPECT_NE(wrong_type.message().find("input 0 of node 'add' is float32, but 'i':0 is int32"),
            std::string::npos)
      << wrong_type;
  EXPECT_FALSE(graph_.ReplaceInput(*add, 2, {b, 0}).ok());
  EXPECT_FALSE(graph_.ReplaceInput(*add, 0, {b, 1}).ok());
  EXPECT_EQ((*add)->input_edge(0)->src, a);  // unchanged by the refusals
}

TEST_F(GraphTest, FindCycleReportsAControlLoop) {
  Node* a = Placeholder("a", DataType::kFloat, PartialShape({2}));
  auto b = graph_.AddNode(Def("b", "Identity", {{"T", MakeAttrValue(DataType::kFloat)}}), {{a, 0}});
  auto c =
      graph_.AddNode(Def("c", "Identity", {{"T", MakeAttrValue(DataType::kFloat)}}), {{*b, 0}});
  EXPECT_TRUE(FindCycle(graph_).empty());
  graph_.AddControlEdge(*c, *b);
  std::vector<std::string> cycle = FindCycle(graph_);
  EXPECT_EQ(cycle, (std::vector<std::string>{"b", "c"}));
}

}  // namespace
}  // namespace weft
