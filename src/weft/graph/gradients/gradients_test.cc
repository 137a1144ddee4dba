// Tests of AddSymbolicGradients itself: summed gradients of tensors used several times, pruning
// of paths that do not connect xs to ys, errors for ops without a gradient on a path, zeros for
// unreachable xs, several ys with explicit grad_ys, multi-output ops, and a W1-shaped MLP
// (784-256-256-10 with softmax cross-entropy) whose gradients have the variables' shapes.
#include "weft/graph/gradients/gradients.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/graph/builder/variable.h"
#include "weft/runtime/session.h"
#include "weft/testing/gradient_checker.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

using testing::RunGraph;

Tensor Doubles(const std::vector<double>& values) { return Tensor::FromVector(values); }

// Runs `grads` with x fed `value`; a failed run fails the test and returns nothing.
std::vector<Tensor> RunWithX(const Scope& root, const Output& x, const Tensor& value,
                             const std::vector<Output>& grads) {
  StatusOr<std::vector<Tensor>> values = RunGraph(root, {{x.name(), value}}, grads);
  EXPECT_TRUE(values.ok()) << values.status();
  return values.ok() ? *values : std::vector<Tensor>();
}

TEST(GradientsTest, TensorUsedTwiceGetsTheSumOfItsGradients) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({3}));
  Output y = ops::Add(root, ops::Mul(root, x, x), x);  // dy/dx = 2x + 1
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x}, &grads).ok());
  ASSERT_EQ(grads.size(), 1u);
  std::vector<Tensor> values = RunWithX(root, x, Doubles({1, -2, 0.5}), grads);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_TENSOR_NEAR(values[0], Doubles({3, -3, 2}));
}

TEST(GradientsTest, DiamondSumsBothBranches) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({2}));
  Output a = ops::Exp(root, x);
  Output b = ops::Square(root, a);                  // exp(2x)
  Output y = ops::Sub(root, b, ops::Neg(root, a));  // exp(2x) + exp(x)
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x}, &grads).ok());
  std::vector<Tensor> values = RunWithX(root, x, Doubles({0, 1}), grads);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_TENSOR_NEAR(values[0], Doubles({2 + 1, 2 * std::exp(2.0) + std::exp(1.0)}));
}

TEST(GradientsTest, NodesOffThePathsAreNotDifferentiated) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({2}));
  Output a = ops::Placeholder(root.WithOpName("a"), DataType::kDouble, PartialShape({2}));
  // ReluGrad has no registered gradient: it is fine feeding y from outside the xs' reach...
  Output scale = ops::ReluGrad(root, a, a);
  // ...and fine reached from x when it leads to no y.
  ops::ReluGrad(root, x, x);
  Output y = ops::Mul(root, x, scale);
  std::vector<Output> grads;
  Status status = AddSymbolicGradients(root, {y}, {x}, &grads);
  ASSERT_TRUE(status.ok()) << status;
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{x.name(), Doubles({1, 2})}, {a.name(), Doubles({3, -1})}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Doubles({3, 0}));
}

TEST(GradientsTest, OpWithoutGradientOnThePathIsInvalidArgument) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({2}));
  Output bad = ops::ReluGrad(root.WithOpName("second_order"), x, x);
  Output y = ops::Exp(root, bad);
  std::vector<Output> grads;
  Status status = AddSymbolicGradients(root, {y}, {x}, &grads);
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("second_order"), std::string::npos) << status;
  EXPECT_NE(status.message().find("ReluGrad"), std::string::npos) << status;
}

TEST(GradientsTest, EmptyRegistryNamesTheFirstNodeOnThePath) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({2}));
  Output y = ops::Neg(root.WithOpName("negate"), x);
  GradientRegistry empty;
  std::vector<Output> grads;
  Status status = AddSymbolicGradients(root, empty, {y}, {x}, {}, &grads);
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("'negate'"), std::string::npos) << status;
  EXPECT_NE(status.message().find("'Neg'"), std::string::npos) << status;
}

TEST(GradientsTest, NotDifferentiableOpOnThePathIsAnErrorWithTheReason) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({2}));
  Output y = ops::Neg(root.WithOpName("negate"), x);
  GradientRegistry registry;
  registry.RegisterNotDifferentiable("Neg", "negation is off limits here");
  EXPECT_TRUE(IsInvalidArgument(registry.Lookup("Neg").status()));
  EXPECT_EQ(registry.OpNames(), std::vector<std::string>{"Neg"});
  std::vector<Output> grads;
  Status status = AddSymbolicGradients(root, registry, {y}, {x}, {}, &grads);
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("'negate'"), std::string::npos) << status;
  EXPECT_NE(status.message().find("'Neg' is not differentiable"), std::string::npos) << status;
  EXPECT_NE(status.message().find("off limits"), std::string::npos) << status;
}

TEST(GradientsTest, XThatNoYDependsOnGetsZeros) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({2}));
  Output unused = ops::Placeholder(root.WithOpName("unused"), DataType::kDouble, PartialShape({3}));
  Output blocked =
      ops::Placeholder(root.WithOpName("blocked"), DataType::kDouble, PartialShape({2}));
  Output y = ops::Add(root, ops::Mul(root, x, 2.0), ops::StopGradient(root, blocked));
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x, unused, blocked}, &grads).ok());
  ASSERT_EQ(grads.size(), 3u);
  StatusOr<std::vector<Tensor>> values = RunGraph(root,
                                                  {{x.name(), Doubles({1, 2})},
                                                   {unused.name(), Doubles({1, 2, 3})},
                                                   {blocked.name(), Doubles({5, 6})}},
                                                  grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Doubles({2, 2}));
  EXPECT_TENSOR_NEAR((*values)[1], Doubles({0, 0, 0}));
  EXPECT_TENSOR_NEAR((*values)[2], Doubles({0, 0}));
}

TEST(GradientsTest, SeveralYsWithExplicitGradYs) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({2}));
  Output y1 = ops::Mul(root, x, 3.0);
  Output y2 = ops::Square(root, x);
  Output y3 = ops::Exp(root, y1);  // a y that depends on another y
  Output g1 = ops::Const(root, Doubles({1, 10}));
  Output g2 = ops::Const(root, Doubles({2, 20}));
  Output g3 = ops::Const(root, Doubles({0, 0}));
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y1, y2, y3}, {x}, {g1, g2, g3}, &grads).ok());
  // 3 g1 + 2x g2 + 3 exp(3x) g3
  std::vector<Tensor> values = RunWithX(root, x, Doubles({1, -1}), grads);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_TENSOR_NEAR(values[0], Doubles({3 + 4, 30 - 40}));

  // Default grad_ys are ones.
  std::vector<Output> ones_grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y1, y2}, {x}, &ones_grads).ok());
  values = RunWithX(root, x, Doubles({1, -1}), ones_grads);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_TENSOR_NEAR(values[0], Doubles({5, 1}));
}

TEST(GradientsTest, GradYsOfTheWrongCountAreInvalidArgument) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({2}));
  std::vector<Output> grads;
  Status status = AddSymbolicGradients(root, {ops::Neg(root, x), ops::Exp(root, x)}, {x},
                                       {ops::OnesLike(root, x)}, &grads);
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
}

TEST(GradientsTest, XMayBeAnIntermediateTensor) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({2}));
  Output h = ops::Mul(root, x, 2.0);
  Output y = ops::Square(root, h);
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {h, x}, &grads).ok());
  std::vector<Tensor> values = RunWithX(root, x, Doubles({1, 3}), grads);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_TENSOR_NEAR(values[0], Doubles({4, 12}));  // 2h
  EXPECT_TENSOR_NEAR(values[1], Doubles({8, 24}));  // 8x
}

TEST(GradientsTest, MultiOutputOpWithOneOutputUsed) {
  Scope root = Scope::NewRootScope();
  Output logits =
      ops::Placeholder(root.WithOpName("logits"), DataType::kDouble, PartialShape({1, 2}));
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, {1});
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {xent.loss}, {logits}, &grads).ok());
  StatusOr<std::vector<Tensor>> values = RunGraph(
      root, {{logits.name(), Tensor::FromVector<double>({0, 0}, TensorShape({1, 2}))}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({0.5, -0.5}, TensorShape({1, 2})));
}

TEST(GradientCheckerTest, AcceptsACorrectGradientAndCatchesAWrongOne) {
  const TensorShape shape({2, 3});
  auto check = [&](const GradientRegistry* registry) {
    Scope root = Scope::NewRootScope();
    Output x = testing::Float64Placeholder(root.WithOpName("x"), shape);
    Output y = ops::Exp(root, x);
    testing::GradientCheckOptions options;
    options.registry = registry;
    return testing::ComputeGradientError(root, {x}, {testing::RandomTensor(shape, -1, 1, 1)}, y,
                                         options);
  };
  StatusOr<double> right = check(nullptr);
  ASSERT_TRUE(right.ok()) << right.status();
  EXPECT_LT(*right, 1e-8);

  // d exp(x) taken as exp(x) + 0.001: every element is off by 0.001 times its weight.
  GradientRegistry wrong;
  wrong.Register("Exp", [](const Scope& scope, Node* op, const std::vector<Output>& dz,
                           std::vector<Output>* dx) {
    *dx = {ops::Mul(scope, dz[0], ops::Add(scope, Output(op, 0), 0.001))};
    return scope.status();
  });
  StatusOr<double> error = check(&wrong);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_GT(*error, 1e-4);
  EXPECT_LT(*error, 1e-3);
}

TEST(GradientCheckerTest, RejectsAGradientOfTheWrongShape) {
  Scope root = Scope::NewRootScope();
  Output x = testing::Float64Placeholder(root.WithOpName("x"), TensorShape({2, 3}));
  GradientRegistry wrong;
  wrong.Register(
      "Neg", [](const Scope& scope, Node*, const std::vector<Output>& dz, std::vector<Output>* dx) {
        *dx = {ops::Sum(scope, dz[0], 0)};
        return scope.status();
      });
  testing::GradientCheckOptions options;
  options.registry = &wrong;
  StatusOr<double> error = testing::ComputeGradientError(
      root, {x}, {testing::RandomTensor({2, 3}, -1, 1, 2)}, ops::Neg(root, x), options);
  EXPECT_TRUE(IsInvalidArgument(error.status())) << error.status();
}

TEST(GradientCheckerTest, RejectsNonFloat64Tensors) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kFloat, PartialShape({2}));
  StatusOr<double> error = testing::ComputeGradientError(
      root, {x}, {Tensor::FromVector<float>({1, 2})}, ops::Neg(root, x));
  EXPECT_TRUE(IsInvalidArgument(error.status())) << error.status();
}

// The W1 workload: an MLP 784-256-256-10 on float32 variables, softmax cross-entropy, a batch
// of 4 fed through a placeholder of unknown batch size.
TEST(GradientsTest, MlpGradientsHaveTheVariablesShapes) {
  Scope root = Scope::NewRootScope();
  Output images =
      ops::Placeholder(root.WithOpName("images"), DataType::kFloat, PartialShape({-1, 784}));
  Output labels = ops::Placeholder(root.WithOpName("labels"), DataType::kInt64, PartialShape({-1}));
  const std::vector<std::pair<int64_t, int64_t>> layers = {{784, 256}, {256, 256}, {256, 10}};
  std::vector<Variable> variables;
  std::vector<Output> reads, inits;
  Output h = images;
  for (size_t i = 0; i < layers.size(); ++i) {
    Scope layer = root.NewSubScope(StrCat("dense", i));
    Variable w = Variable::Create(layer, "w", {layers[i].first, layers[i].second}, DataType::kFloat,
                                  Initializer::GlorotUniform(1 + i));
    Variable b = Variable::Create(layer, "b", {layers[i].second}, DataType::kFloat,
                                  Initializer::Constant(0.1));
    Output w_read = w.Read(layer), b_read = b.Read(layer);
    h = ops::BiasAdd(layer, ops::MatMul(layer, h, w_read), b_read);
    if (i + 1 < layers.size()) h = ops::Relu(layer, h);
    for (const Variable& v : {w, b}) {
      variables.push_back(v);
      inits.push_back(v.initializer());
    }
    reads.push_back(w_read);
    reads.push_back(b_read);
  }
  Output loss = ops::Mean(root, ops::SparseSoftmaxCrossEntropyWithLogits(root, h, labels).loss, 0);
  std::vector<Output> grads;
  Status status = AddSymbolicGradients(root, {loss}, reads, &grads);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(grads.size(), reads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    EXPECT_EQ(grads[i].dtype(), DataType::kFloat);
    EXPECT_TRUE(grads[i].shape().IsCompatibleWith(variables[i].shape()))
        << variables[i].name() << ": " << grads[i].shape().DebugString();
  }

  StatusOr<proto::GraphDef> graph = root.ToGraphDef();
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::unique_ptr<Session> session = std::move(NewSession(SessionOptions())).value();
  ASSERT_TRUE(session->Create(*graph).ok());
  std::vector<std::string> init_names, grad_names;
  for (const Output& init : inits) init_names.push_back(init.node()->name());
  for (const Output& grad : grads) grad_names.push_back(grad.name());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, init_names, &outputs).ok());
  std::vector<float> pixels(4 * 784);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i % 17) / 17.0f;
  Status run = session->Run({{images.name(), Tensor::FromVector(pixels, TensorShape({4, 784}))},
                             {labels.name(), Tensor::FromVector<int64_t>({3, 0, 9, 3})}},
                            grad_names, {}, &outputs);
  ASSERT_TRUE(run.ok()) << run;
  ASSERT_EQ(outputs.size(), variables.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_EQ(outputs[i].shape(), variables[i].shape()) << variables[i].name();
  }
  // The last bias's gradient is the batch mean of softmax - one_hot: its entries sum to 0.
  double sum = 0;
  for (float g : outputs.back().flat<float>()) sum += g;
  EXPECT_NEAR(sum, 0, 1e-5);
}

}  // namespace
}  // namespace weft
