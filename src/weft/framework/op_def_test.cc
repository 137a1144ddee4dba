#include "weft/framework/op_def.h"

#include <gtest/gtest.h>

#include "weft/framework/op_registry.h"

namespace weft {
namespace {

TEST(OpDefBuilderTest, ParsesInputsOutputsAndAttrs) {
  StatusOr<OpDef> op = OpDefBuilder("AddN")
                           .Input("inputs: N * T")
                           .Output("sum: T")
                           .Attr("N: int >= 1")
                           .Attr("T: {float32, float64}")
                           .Doc("Sums a list.")
                           .Build();
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_EQ(op->inputs.size(), 1u);
  EXPECT_EQ(op->inputs[0].number_attr, "N");
  EXPECT_EQ(op->inputs[0].type_attr, "T");
  EXPECT_EQ(op->outputs[0].type_attr, "T");
  const AttrDef* n = op->FindAttr("N");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->kind, "int");
  EXPECT_EQ(*n->minimum, 1);
  const AttrDef* t = op->FindAttr("T");
  EXPECT_EQ(t->kind, "type");
  EXPECT_EQ(t->allowed_types, (std::vector<DataType>{DataType::kFloat, DataType::kDouble}));
  EXPECT_EQ(op->doc, "Sums a list.");
}

TEST(OpDefBuilderTest, ParsesDefaultsAndStringChoices) {
  StatusOr<AttrDef> flag = ParseAttrSpec("transpose_a: bool = true");
  ASSERT_TRUE(flag.ok());
  EXPECT_TRUE(flag->default_value->b());
  StatusOr<AttrDef> padding = ParseAttrSpec("padding: {'SAME', 'VALID'}");
  ASSERT_TRUE(padding.ok());
  EXPECT_EQ(padding->kind, "string");
  EXPECT_EQ(padding->allowed_strings, (std::vector<std::string>{"SAME", "VALID"}));
  StatusOr<AttrDef> axes = ParseAttrSpec("axis: list(int) = [1, -1]");
  ASSERT_TRUE(axes.ok());
  EXPECT_EQ(axes->default_value->list().i_size(), 2);
  EXPECT_EQ(axes->default_value->list().i(1), -1);
  StatusOr<AttrDef> names = ParseAttrSpec("names: list(string) = ['a', 'b/c']");
  ASSERT_TRUE(names.ok()) << names.status();
  ASSERT_EQ(names->default_value->list().s_size(), 2);
  EXPECT_EQ(names->default_value->list().s(1), "b/c");
  StatusOr<AttrDef> no_names = ParseAttrSpec("names: list(string) = []");
  ASSERT_TRUE(no_names.ok()) << no_names.status();
  EXPECT_EQ(no_names->default_value->list().s_size(), 0);
  EXPECT_FALSE(ParseAttrSpec("names: list(string) = [a]").ok());
  StatusOr<AttrDef> unknown = ParseAttrSpec("shape: shape = unknown");
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_TRUE(unknown->default_value->shape().unknown_rank());
  StatusOr<AttrDef> dims = ParseAttrSpec("shape: shape = [2, -1]");
  ASSERT_TRUE(dims.ok()) << dims.status();
  EXPECT_EQ(dims->default_value->shape().dim(1).size(), -1);
  StatusOr<AttrDef> type = ParseAttrSpec("dtype: type = int32");
  ASSERT_TRUE(type.ok());
  EXPECT_EQ(type->default_value->type(), proto::DT_INT32);
}

TEST(OpDefBuilderTest, FixedTypeArgs) {
  StatusOr<OpDef> op =
      OpDefBuilder("Shape").Input("x: T").Output("y: int32").Attr("T: type").Build();
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(op->outputs[0].type, DataType::kInt32);
}

TEST(OpDefBuilderTest, FlagsDefaultToAUserFacingStatelessOp) {
  StatusOr<OpDef> plain = OpDefBuilder("Plain").Build();
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->is_stateful);
  EXPECT_FALSE(plain->is_internal);
  StatusOr<OpDef> internal = OpDefBuilder("_Helper").SetIsInternal().Build();
  ASSERT_TRUE(internal.ok());
  EXPECT_TRUE(internal->is_internal);
  EXPECT_FALSE(internal->is_stateful);
}

TEST(OpDefBuilderTest, RejectsMalformedSpecsNamingTheOp) {
  Status unknown_attr = OpDefBuilder("Bad").Input("x: U").Build().status();
  EXPECT_TRUE(IsInvalidArgument(unknown_attr));
  EXPECT_NE(unknown_attr.message().find("op Bad"), std::string::npos) << unknown_attr;
  EXPECT_FALSE(ParseAttrSpec("x int").ok());
  EXPECT_FALSE(ParseAttrSpec("x: complex").ok());
  EXPECT_FALSE(ParseAttrSpec("x: bool = maybe").ok());
  EXPECT_FALSE(ParseAttrSpec("x: {float32, quaternion}").ok());
  EXPECT_FALSE(OpDefBuilder("Dup").Attr("T: type").Attr("T: type").Build().ok());
}

TEST(OpRegistryTest, LooksUpRegisteredOpsAndRefusesDuplicates) {
  OpRegistry registry;
  ASSERT_TRUE(registry.Register(OpDefBuilder("NoOp")).ok());
  EXPECT_TRUE(registry.LookUp("NoOp").ok());
  Status missing = registry.LookUp("Frobnicate").status();
  EXPECT_TRUE(IsNotFound(missing));
  EXPECT_NE(missing.message().find("Frobnicate"), std::string::npos);
  EXPECT_EQ(registry.Register(OpDefBuilder("NoOp")).code(), Code::kAlreadyExists);
}

}  // namespace
}  // namespace weft
