#include "weft/train/optimizer.h"

#include <cmath>

#include <gtest/gtest.h>

#include "weft/runtime/session.h"

namespace weft::train {
namespace {

// Minimizes loss = sum((w - target)^2) for a 3-element float64 w starting at zero, running
// `steps` steps; returns w after each step.
std::vector<std::vector<double>> RunSteps(Optimizer& optimizer, int steps) {
  Scope root = Scope::NewRootScope();
  Variable w =
      Variable::Create(root, "w", TensorShape({3}), DataType::kDouble, Initializer::Zeros());
  Output target = ops::Const(root, Tensor::FromVector<double>({1.0, -2.0, 0.5}));
  Output loss = ops::Sum(root, ops::Square(root, ops::Sub(root, w.Read(root), target)), 0);
  auto train_op = optimizer.Minimize(root, loss, {w});
  EXPECT_TRUE(train_op.ok()) << train_op.status();
  std::vector<std::string> inits = {w.initializer().name()};
  for (const Output& init : optimizer.initializers()) inits.push_back(init.name());
  Output read = w.Read(root.WithControlDependencies({*train_op}));
  auto session = NewSession(SessionOptions()).value();
  EXPECT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  EXPECT_TRUE(session->Run({}, {}, inits, &outputs).ok());
  std::vector<std::vector<double>> history;
  for (int i = 0; i < steps; ++i) {
    Status s = session->Run({}, {read.name()}, {}, &outputs);
    EXPECT_TRUE(s.ok()) << s;
    auto values = outputs[0].flat<double>();
    history.emplace_back(values.begin(), values.end());
  }
  return history;
}

const double kTarget[3] = {1.0, -2.0, 0.5};

TEST(OptimizerTest, GradientDescentFollowsTheFormula) {
  auto optimizer = NewGradientDescentOptimizer(0.1);
  auto history = RunSteps(*optimizer, 3);
  double w[3] = {0, 0, 0};
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < 3; ++i) {
      w[i] -= 0.1 * 2 * (w[i] - kTarget[i]);
      EXPECT_NEAR(history[step][i], w[i], 1e-12) << "step " << step << " element " << i;
    }
  }
}

TEST(OptimizerTest, MomentumFollowsTheFormula) {
  for (bool nesterov : {false, true}) {
    auto optimizer = NewMomentumOptimizer(0.1, 0.9, nesterov);
    auto history = RunSteps(*optimizer, 3);
    double w[3] = {0, 0, 0}, accum[3] = {0, 0, 0};
    for (int step = 0; step < 3; ++step) {
      for (int i = 0; i < 3; ++i) {
        double grad = 2 * (w[i] - kTarget[i]);
        accum[i] = accum[i] * 0.9 + grad;
        w[i] -= nesterov ? 0.1 * grad + 0.1 * 0.9 * accum[i] : 0.1 * accum[i];
        EXPECT_NEAR(history[step][i], w[i], 1e-12) << "nesterov " << nesterov;
      }
    }
  }
}

TEST(OptimizerTest, AdamFollowsTheFormula) {
  auto optimizer = NewAdamOptimizer(0.1, 0.9, 0.999, 1e-7);
  auto history = RunSteps(*optimizer, 3);
  double w[3] = {0, 0, 0}, m[3] = {0, 0, 0}, v[3] = {0, 0, 0};
  double beta1_power = 0.9, beta2_power = 0.999;
  for (int step = 0; step < 3; ++step) {
    double lr = 0.1 * std::sqrt(1 - beta2_power) / (1 - beta1_power);
    for (int i = 0; i < 3; ++i) {
      double grad = 2 * (w[i] - kTarget[i]);
      m[i] = 0.9 * m[i] + 0.1 * grad;
      v[i] = 0.999 * v[i] + 0.001 * grad * grad;
      w[i] -= lr * m[i] / (std::sqrt(v[i]) + 1e-7);
      EXPECT_NEAR(history[step][i], w[i], 1e-9) << "step " << step;
    }
    beta1_power *= 0.9;
    beta2_power *= 0.999;
  }
}

TEST(OptimizerTest, AVariableReadTwiceGetsTheSumOfBothGradients) {
  Scope root = Scope::NewRootScope();
  Variable w =
      Variable::Create(root, "w", TensorShape({}), DataType::kDouble, Initializer::Constant(3.0));
  // loss = w * w computed from two separate reads: d/dw = 2w = 6.
  Output loss = ops::Mul(root, w.Read(root), w.Read(root));
  auto optimizer = NewGradientDescentOptimizer(1.0);
  auto gradients = optimizer->ComputeGradients(root, loss, {w});
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, {w.initializer().name()}, &outputs).ok());
  ASSERT_TRUE(session->Run({}, {(*gradients)[0].gradient.name()}, {}, &outputs).ok());
  EXPECT_EQ(*outputs[0].data<double>(), 6.0);
}

}  // namespace
}  // namespace weft::train
