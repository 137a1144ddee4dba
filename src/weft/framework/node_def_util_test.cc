#include "weft/framework/node_def_util.h"

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"

namespace weft {
namespace {

OpDef MatMulLike() {
  return OpDefBuilder("MatMul")
      .Input("a: T")
      .Input("b: T")
      .Output("product: T")
      .Attr("transpose_a: bool = false")
      .Attr("T: {float32, float64}")
      .Build()
      .value();
}

proto::NodeDef MakeNode(std::vector<std::string> inputs) {
  proto::NodeDef node;
  node.set_name("mm");
  node.set_op("MatMul");
  for (auto& input : inputs) node.add_input(input);
  (*node.mutable_attr())["T"] = MakeAttrValue(DataType::kFloat);
  return node;
}

TEST(ParseTensorNameTest, ParsesPlainIndexedAndControlNames) {
  auto plain = ParseTensorName("x");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->node, "x");
  EXPECT_EQ(plain->index, 0);
  auto indexed = ParseTensorName("scope/x:12");
  ASSERT_TRUE(indexed.ok());
  EXPECT_EQ(indexed->node, "scope/x");
  EXPECT_EQ(indexed->index, 12);
  auto control = ParseTensorName("^y");
  ASSERT_TRUE(control.ok());
  EXPECT_TRUE(control->is_control());
  EXPECT_FALSE(ParseTensorName("x:").ok());
  EXPECT_FALSE(ParseTensorName("x:-1").ok());
  EXPECT_FALSE(ParseTensorName("x:1a").ok());
  EXPECT_FALSE(ParseTensorName("").ok());
  EXPECT_FALSE(ParseTensorName("^").ok());
}

TEST(ValidateNodeDefTest, AcceptsAValidNodeAfterDefaults) {
  OpDef op = MatMulLike();
  proto::NodeDef node = MakeNode({"a", "b:0", "^c"});
  AddDefaultsToNodeDef(op, &node);
  EXPECT_FALSE(node.attr().at("transpose_a").b());
  EXPECT_TRUE(ValidateNodeDef(node, op).ok());
}

TEST(ValidateNodeDefTest, MissingAttrNamesNodeAndAttr) {
  OpDef op = MatMulLike();
  proto::NodeDef node = MakeNode({"a", "b"});
  node.mutable_attr()->erase("T");
  AddDefaultsToNodeDef(op, &node);
  Status s = ValidateNodeDef(node, op);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("node 'mm' (MatMul)"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'T'"), std::string::npos) << s;
}

TEST(ValidateNodeDefTest, AttrOfWrongKindIsRefused) {
  OpDef op = MatMulLike();
  proto::NodeDef node = MakeNode({"a", "b"});
  (*node.mutable_attr())["transpose_a"] = MakeAttrValue(int64_t{3});
  Status s = ValidateNodeDef(node, op);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("transpose_a"), std::string::npos) << s;
  EXPECT_NE(s.message().find("should be bool"), std::string::npos) << s;
}

TEST(ValidateNodeDefTest, DisallowedDtypeIsRefused) {
  OpDef op = MatMulLike();
  proto::NodeDef node = MakeNode({"a", "b"});
  (*node.mutable_attr())["T"] = MakeAttrValue(DataType::kInt32);
  AddDefaultsToNodeDef(op, &node);
  Status s = ValidateNodeDef(node, op);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s;
  EXPECT_NE(s.message().find("float32"), std::string::npos) << s;
}

TEST(ValidateNodeDefTest, WrongInputCountAndMisplacedControlInputs) {
  OpDef op = MatMulLike();
  proto::NodeDef few = MakeNode({"a"});
  AddDefaultsToNodeDef(op, &few);
  Status s = ValidateNodeDef(few, op);
  EXPECT_NE(s.message().find("expects 2 data inputs, but has 1"), std::string::npos) << s;
  proto::NodeDef misplaced = MakeNode({"a", "^c", "b"});
  AddDefaultsToNodeDef(op, &misplaced);
  EXPECT_TRUE(IsInvalidArgument(ValidateNodeDef(misplaced, op)));
}

TEST(ValidateNodeDefTest, UnknownAttrIsRefusedButRuntimeAttrsAreAllowed) {
  OpDef op = MatMulLike();
  proto::NodeDef node = MakeNode({"a", "b"});
  AddDefaultsToNodeDef(op, &node);
  (*node.mutable_attr())["_class"] = MakeAttrValue("loc:@x");
  EXPECT_TRUE(ValidateNodeDef(node, op).ok());
  (*node.mutable_attr())["colour"] = MakeAttrValue("red");
  EXPECT_NE(ValidateNodeDef(node, op).message().find("unknown attr 'colour'"), std::string::npos);
}

TEST(InOutTypesForNodeTest, ExpandsListArgs) {
  OpDef op = OpDefBuilder("AddN")
                 .Input("inputs: N * T")
                 .Output("sum: T")
                 .Attr("N: int >= 1")
                 .Attr("T: type")
                 .Build()
                 .value();
  proto::NodeDef node;
  node.set_name("sum");
  node.set_op("AddN");
  (*node.mutable_attr())["N"] = MakeAttrValue(3);
  (*node.mutable_attr())["T"] = MakeAttrValue(DataType::kDouble);
  std::vector<DataType> in, out;
  ASSERT_TRUE(InOutTypesForNode(node, op, &in, &out).ok());
  EXPECT_EQ(in, std::vector<DataType>(3, DataType::kDouble));
  EXPECT_EQ(out, std::vector<DataType>{DataType::kDouble});
}

}  // namespace
}  // namespace weft
