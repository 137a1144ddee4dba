// Builders of the state, random and training ops: attrs, dtype inference from the handle, and a
// run of each through a DirectSession.
#include "weft/graph/builder/ops/state_ops.h"

#include <cmath>

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/runtime/session.h"

namespace weft {
namespace {

std::unique_ptr<Session> MakeSession(const Scope& root) {
  StatusOr<proto::GraphDef> graph = root.ToGraphDef();
  EXPECT_TRUE(graph.ok()) << graph.status();
  std::unique_ptr<Session> session = std::move(NewSession(SessionOptions())).value();
  Status created = session->Create(*graph);
  EXPECT_TRUE(created.ok()) << created;
  return session;
}

Status RunTargets(Session& session, const std::vector<Output>& targets) {
  std::vector<std::string> names;
  for (const Output& t : targets) names.push_back(t.node()->name());
  std::vector<Tensor> outputs;
  return session.Run({}, {}, names, &outputs);
}

Tensor Fetch(Session& session, const Output& output) {
  std::vector<Tensor> outputs;
  Status status = session.Run({}, {output.name()}, {}, &outputs);
  EXPECT_TRUE(status.ok()) << status;
  return status.ok() ? outputs[0] : Tensor();
}

TEST(StateOpsBuilderTest, HandleAttrsAndDtypeFromTheHandle) {
  Scope root = Scope::NewRootScope();
  Output handle = ops::VarHandleOp(root.WithOpName("v"), DataType::kDouble, PartialShape({2}),
                                   {.container = "c", .shared_name = "shared"});
  Output assign = ops::AssignVariableOp(root, handle, {1.0f, 2.0f});  // literal -> float64
  Output read = ops::ReadVariableOp(root, handle);
  ASSERT_TRUE(root.ok()) << root.status();
  std::string container, shared_name;
  ASSERT_TRUE(GetNodeAttr(handle.node()->def(), "container", &container).ok());
  ASSERT_TRUE(GetNodeAttr(handle.node()->def(), "shared_name", &shared_name).ok());
  EXPECT_EQ(container, "c");
  EXPECT_EQ(shared_name, "shared");
  EXPECT_EQ(handle.dtype(), DataType::kResource);
  EXPECT_EQ(handle.shape(), PartialShape({}));
  EXPECT_EQ(assign.node()->input_type(1), DataType::kDouble);
  EXPECT_EQ(read.dtype(), DataType::kDouble);

  // A handle not from a VarHandleOp needs an explicit dtype.
  Output forwarded = ops::Identity(root, handle);
  EXPECT_FALSE(ops::ReadVariableOp(root, forwarded));
  EXPECT_TRUE(IsInvalidArgument(root.status())) << root.status();
}

TEST(StateOpsBuilderTest, VariableLifecycleThroughASession) {
  Scope root = Scope::NewRootScope();
  Output handle = ops::VarHandleOp(root.WithOpName("v"), DataType::kFloat, PartialShape({2}));
  Output is_init = ops::VarIsInitializedOp(root, handle);
  Output assign = ops::AssignVariableOp(root, handle, ops::Const(root, {1.0f, 2.0f}));
  Output add = ops::AssignAddVariableOp(root, handle, ops::Const(root, {10.0f, 10.0f}));
  Output sub = ops::AssignSubVariableOp(root, handle, {1.0f, 1.0f});
  Output read = ops::ReadVariableOp(root, handle);
  Output destroy = ops::DestroyResourceOp(root, handle);
  ASSERT_TRUE(root.ok()) << root.status();
  std::unique_ptr<Session> session = MakeSession(root);
  EXPECT_FALSE(*Fetch(*session, is_init).data<bool>());
  ASSERT_TRUE(RunTargets(*session, {assign}).ok());
  EXPECT_TRUE(*Fetch(*session, is_init).data<bool>());
  ASSERT_TRUE(RunTargets(*session, {add}).ok());
  ASSERT_TRUE(RunTargets(*session, {sub}).ok());
  Tensor value = Fetch(*session, read);
  EXPECT_EQ(value.data<float>()[0], 10.0f);
  EXPECT_EQ(value.data<float>()[1], 11.0f);
  ASSERT_TRUE(RunTargets(*session, {destroy}).ok());
  EXPECT_FALSE(*Fetch(*session, is_init).data<bool>());
}

TEST(RandomOpsBuilderTest, ShapesFromLiteralsAndSeeds) {
  Scope root = Scope::NewRootScope();
  Output u = ops::RandomUniform(root, {2, 3}, DataType::kFloat, {.seed = 3, .seed2 = 4});
  Output n = ops::RandomStandardNormal(root, {5}, DataType::kDouble, {.seed = 3});
  Output t = ops::TruncatedNormal(root, {4, 4}, DataType::kFloat, {.seed = 3});
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(u.shape(), PartialShape({2, 3}));
  EXPECT_EQ(n.shape(), PartialShape({5}));
  EXPECT_EQ(n.dtype(), DataType::kDouble);
  int64_t seed2 = 0;
  ASSERT_TRUE(GetNodeAttr(u.node()->def(), "seed2", &seed2).ok());
  EXPECT_EQ(seed2, 4);

  std::unique_ptr<Session> a = MakeSession(root), b = MakeSession(root);
  for (const Output& out : {u, n, t}) {
    Tensor first = Fetch(*a, out);
    Tensor other = Fetch(*b, out);
    EXPECT_EQ(std::memcmp(first.raw_data(), other.raw_data(), first.TotalBytes()), 0);
    // Each run of the node draws new values.
    Tensor next = Fetch(*a, out);
    EXPECT_NE(std::memcmp(first.raw_data(), next.raw_data(), first.TotalBytes()), 0);
  }
}

TEST(TrainingOpsBuilderTest, LiteralHyperparametersTakeTheVariableDtype) {
  Scope root = Scope::NewRootScope();
  Output w = ops::VarHandleOp(root.WithOpName("w"), DataType::kFloat, PartialShape({2}));
  Output m = ops::VarHandleOp(root.WithOpName("m"), DataType::kFloat, PartialShape({2}));
  Output v = ops::VarHandleOp(root.WithOpName("v"), DataType::kFloat, PartialShape({2}));
  Output init = ops::NoOp(root.WithControlDependencies(
      {ops::AssignVariableOp(root, w, {1.0f, 1.0f}), ops::AssignVariableOp(root, m, {0.0f, 0.0f}),
       ops::AssignVariableOp(root, v, {0.0f, 0.0f})}));
  Output gd = ops::ResourceApplyGradientDescent(root, w, 0.5, {1.0, -1.0});
  Output adam = ops::ResourceApplyAdam(root, w, m, v, 0.9, 0.999, 0.1, 0.9, 0.999, 1e-8,
                                       {1.0, -1.0}, {.use_nesterov = true});
  Output read = ops::ReadVariableOp(root, w);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(gd.node()->input_type(1), DataType::kFloat);
  EXPECT_EQ(adam.node()->input_type(9), DataType::kFloat);
  bool nesterov = false;
  ASSERT_TRUE(GetNodeAttr(adam.node()->def(), "use_nesterov", &nesterov).ok());
  EXPECT_TRUE(nesterov);

  std::unique_ptr<Session> session = MakeSession(root);
  ASSERT_TRUE(RunTargets(*session, {init}).ok());
  ASSERT_TRUE(RunTargets(*session, {gd}).ok());
  Tensor after_gd = Fetch(*session, read);
  EXPECT_EQ(after_gd.data<float>()[0], 0.5f);
  EXPECT_EQ(after_gd.data<float>()[1], 1.5f);
  ASSERT_TRUE(RunTargets(*session, {adam}).ok());
  // One Nesterov Adam step: m = 0.1 g, v = 0.001 g^2, lr_t = 0.1 sqrt(0.001) / 0.1;
  // w -= lr_t (0.9 m + 0.1 g) / (sqrt(v) + eps) = 0.19 * sign(g).
  Tensor after_adam = Fetch(*session, read);
  EXPECT_NEAR(after_adam.data<float>()[0], 0.5f - 0.19f, 1e-5);
  EXPECT_NEAR(after_adam.data<float>()[1], 1.5f + 0.19f, 1e-5);
}

}  // namespace
}  // namespace weft
