#include "weft/graph/builder/scope.h"

#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"

namespace weft {
namespace {

TEST(ScopeTest, NamesAreUniqueAndScoped) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, 1.0f);
  auto b = ops::Const(root, 2.0f);
  EXPECT_EQ(a.node()->name(), "Const");
  EXPECT_EQ(b.node()->name(), "Const_1");
  Scope layer = root.NewSubScope("layer");
  auto c = ops::Add(layer.WithOpName("sum"), a, b);
  EXPECT_EQ(c.node()->name(), "layer/sum");
  auto d = ops::Add(layer.WithOpName("sum"), a, b);
  EXPECT_EQ(d.node()->name(), "layer/sum_1");
  Scope layer_again = root.NewSubScope("layer");
  EXPECT_EQ(ops::Neg(layer_again, a).node()->name(), "layer_1/Neg");
  EXPECT_EQ(layer.NewSubScope("inner").WithOpName("x").GetUniqueNameForOp("Relu"), "layer/inner/x");
}

TEST(ScopeTest, DeviceAndControlDependenciesApplyToNewNodes) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, 1.0f);
  auto b = ops::Identity(root.WithDevice("/device:CPU:1").WithControlDependencies({a}), a);
  EXPECT_EQ(b.node()->requested_device(), "/device:CPU:1");
  bool has_control = false;
  for (const Edge* edge : b.node()->in_edges()) {
    has_control |= edge->IsControlEdge() && edge->src == a.node();
  }
  EXPECT_TRUE(has_control);
  auto c = ops::Identity(root, a);
  EXPECT_EQ(c.node()->requested_device(), "");
}

TEST(ScopeTest, FirstErrorIsKeptAndLaterOpsAreSkipped) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, Tensor(DataType::kFloat, TensorShape({3, 4})));
  auto b = ops::Const(root, Tensor(DataType::kFloat, TensorShape({5, 6})));
  auto bad = ops::MatMul(root.WithOpName("bad"), a, b);
  EXPECT_FALSE(bad);
  EXPECT_FALSE(root.ok());
  auto after = ops::Relu(root, bad);
  EXPECT_FALSE(after);
  Status s = root.ToGraphDef().status();
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("node 'bad' (MatMul)"), std::string::npos) << s;
}

TEST(ScopeTest, OutputsReportDtypeShapeAndName) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, PartialShape({-1, 784}));
  EXPECT_EQ(x.dtype(), DataType::kFloat);
  EXPECT_EQ(x.shape(), PartialShape({-1, 784}));
  EXPECT_EQ(x.name(), "x");
  auto loss = ops::SparseSoftmaxCrossEntropyWithLogits(
      root, ops::Placeholder(root, DataType::kFloat, PartialShape({8, 10})),
      ops::Placeholder(root, DataType::kInt64, PartialShape({8})));
  EXPECT_EQ(loss.backprop.name(), loss.loss.node()->name() + ":1");
}

}  // namespace
}  // namespace weft
