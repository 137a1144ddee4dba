#include "weft/graph/builder/node_builder.h"

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/ops.h"

namespace weft {
namespace {

Tensor ConstValue(const Output& output) {
  Tensor value;
  EXPECT_TRUE(GetNodeAttr(output.node()->def(), "value", &value).ok());
  return value;
}

TEST(NodeBuilderTest, LiteralsTakeTheDtypeOfTheOtherInput) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DataType::kDouble, PartialShape({2}));
  auto y = ops::Mul(root, x, 0.5f);
  ASSERT_TRUE(root.ok()) << root.status();
  Output literal(y.node()->input_edge(1)->src, 0);
  EXPECT_EQ(literal.dtype(), DataType::kDouble);
  EXPECT_EQ(*ConstValue(literal).data<double>(), 0.5);
  auto z = ops::Add(root, 3, ops::Placeholder(root, DataType::kInt64, PartialShape()));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(z.dtype(), DataType::kInt64);
}

TEST(NodeBuilderTest, ExplicitTensorsKeepTheirDtype) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root, DataType::kFloat, PartialShape({2}));
  auto y = ops::Add(root.WithOpName("mixed"), x, Tensor::Scalar<double>(1.0));
  EXPECT_FALSE(y);
  EXPECT_NE(root.status().message().find("mixed"), std::string::npos) << root.status();
}

TEST(NodeBuilderTest, ListInputsSetTheirLength) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {1.0f, 2.0f});
  auto sum = ops::AddN(root, {a, a, a});
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(sum.node()->def().attr().at("N").i(), 3);
  auto joined = ops::Concat(root, {a, a}, 0);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(joined.shape(), PartialShape({4}));
}

TEST(NodeBuilderTest, WrongNumberOfInputsIsAnError) {
  Scope root = Scope::NewRootScope();
  NodeBuilder builder(root, "Relu");
  EXPECT_EQ(builder.Finalize(), nullptr);
  EXPECT_NE(root.status().message().find("takes 1 inputs, but was given 0"), std::string::npos)
      << root.status();
}

}  // namespace
}  // namespace weft
