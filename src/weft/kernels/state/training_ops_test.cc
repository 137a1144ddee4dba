#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "weft/kernels/testing/state_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::state {
namespace {

using testing::Contains;
using testing::MakeHandle;
using testing::MakeVariable;
using testing::MustRead;

using weft::testing::KernelRunner;

const std::vector<std::vector<double>> kGrads = {{1, 0.5}, {2, -1}, {-1, 0.25}};

Tensor Vec(std::vector<double> values) { return Tensor::FromVector(values); }

TEST(ApplyGradientDescentTest, ThreeStepsFloat64) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "w", Vec({1, 2}));
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(
        runner.Run("ResourceApplyGradientDescent", {var, Tensor::Scalar(0.5), Vec({0.1, -0.2})})
            .ok());
  }
  EXPECT_TENSOR_NEAR(MustRead(runner, var, DataType::kDouble), Vec({0.85, 2.3}), 1e-12, 0);
}

void RunMomentum(bool nesterov, const std::vector<std::vector<double>>& expected) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "w", Vec({1, -0.5}));
  Tensor accum = MakeVariable(runner, "w/momentum", Vec({0, 0}));
  for (int step = 0; step < 3; ++step) {
    Status status =
        runner
            .Run("ResourceApplyMomentum",
                 {var, accum, Tensor::Scalar(0.1), Vec(kGrads[step]), Tensor::Scalar(0.9)},
                 {{"use_nesterov", MakeAttrValue(nesterov)}})
            .status();
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_TENSOR_NEAR(MustRead(runner, var, DataType::kDouble), Vec(expected[step]), 1e-12, 0)
        << "step " << step;
  }
  EXPECT_TENSOR_NEAR(MustRead(runner, accum, DataType::kDouble), Vec({1.61, -0.245}), 1e-12, 0);
}

TEST(ApplyMomentumTest, ThreeStepsFloat64) {
  RunMomentum(false, {{0.9, -0.55}, {0.61, -0.495}, {0.449, -0.4705}});
}

TEST(ApplyMomentumTest, ThreeNesterovStepsFloat64) {
  RunMomentum(true, {{0.81, -0.595}, {0.349, -0.4455}, {0.3041, -0.44845}});
}

void RunAdam(bool nesterov, const std::vector<std::vector<double>>& expected) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "w", Vec({1, -0.5}));
  Tensor m = MakeVariable(runner, "w/m", Vec({0, 0}));
  Tensor v = MakeVariable(runner, "w/v", Vec({0, 0}));
  for (int step = 0; step < 3; ++step) {
    int t = step + 1;
    Status status =
        runner
            .Run("ResourceApplyAdam",
                 {var, m, v, Tensor::Scalar(std::pow(0.9, t)), Tensor::Scalar(std::pow(0.999, t)),
                  Tensor::Scalar(0.1), Tensor::Scalar(0.9), Tensor::Scalar(0.999),
                  Tensor::Scalar(1e-8), Vec(kGrads[step])},
                 {{"use_nesterov", MakeAttrValue(nesterov)}})
            .status();
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_TENSOR_NEAR(MustRead(runner, var, DataType::kDouble), Vec(expected[step]), 1e-12, 0)
        << "step " << step;
  }
  EXPECT_TENSOR_NEAR(MustRead(runner, m, DataType::kDouble), Vec({0.161, -0.0245}), 1e-12, 0);
  EXPECT_TENSOR_NEAR(MustRead(runner, v, DataType::kDouble), Vec({0.005994001, 0.00131100025}),
                     1e-12, 0);
}

TEST(ApplyAdamTest, ThreeStepsFloat64) {
  RunAdam(false, {{0.900000031622767, -0.599999936754487},
                  {0.803481842691688, -0.563389594406907},
                  {0.761472917760703, -0.549720531877001}});
}

TEST(ApplyAdamTest, ThreeNesterovStepsFloat64) {
  RunAdam(true, {{0.810000060083257, -0.689999879833525},
                 {0.656569421816956, -0.590486312906921},
                 {0.644853889336203, -0.592132179619705}});
}

// AdamW: three float64 steps against the formula, the decay taken from var before each step; with
// weight_decay 0 it is ResourceApplyAdam bitwise.
TEST(ApplyAdamWTest, ThreeStepsFloat64DecayTheValueBeforeTheStep) {
  for (double weight_decay : {0.0, 0.1}) {
    KernelRunner runner;
    Tensor var = MakeVariable(runner, "w", Vec({1, -0.5}));
    Tensor m = MakeVariable(runner, "w/m", Vec({0, 0}));
    Tensor v = MakeVariable(runner, "w/v", Vec({0, 0}));
    Tensor plain = MakeVariable(runner, "p", Vec({1, -0.5}));
    Tensor plain_m = MakeVariable(runner, "p/m", Vec({0, 0}));
    Tensor plain_v = MakeVariable(runner, "p/v", Vec({0, 0}));
    double w[2] = {1, -0.5}, m_want[2] = {0, 0}, v_want[2] = {0, 0};
    for (int step = 0; step < 3; ++step) {
      const int t = step + 1;
      const double lr = 0.1, beta1_power = std::pow(0.9, t), beta2_power = std::pow(0.999, t);
      std::vector<Tensor> adam = {Tensor::Scalar(beta1_power), Tensor::Scalar(beta2_power),
                                  Tensor::Scalar(lr),          Tensor::Scalar(0.9),
                                  Tensor::Scalar(0.999),       Tensor::Scalar(1e-8)};
      std::vector<Tensor> inputs = {var, m, v};
      inputs.insert(inputs.end(), adam.begin(), adam.end());
      inputs.push_back(Tensor::Scalar(weight_decay));
      inputs.push_back(Vec(kGrads[step]));
      Status status = runner.Run("ResourceApplyAdamW", inputs).status();
      ASSERT_TRUE(status.ok()) << status;
      std::vector<Tensor> plain_inputs = {plain, plain_m, plain_v};
      plain_inputs.insert(plain_inputs.end(), adam.begin(), adam.end());
      plain_inputs.push_back(Vec(kGrads[step]));
      ASSERT_TRUE(runner.Run("ResourceApplyAdam", plain_inputs).ok());
      const double lr_t = lr * std::sqrt(1 - beta2_power) / (1 - beta1_power);
      for (int i = 0; i < 2; ++i) {
        const double g = kGrads[step][i];
        m_want[i] = 0.9 * m_want[i] + 0.1 * g;
        v_want[i] = 0.999 * v_want[i] + 0.001 * g * g;
        w[i] -= lr * weight_decay * w[i] + lr_t * m_want[i] / (std::sqrt(v_want[i]) + 1e-8);
      }
      EXPECT_TENSOR_NEAR(MustRead(runner, var, DataType::kDouble), Vec({w[0], w[1]}), 1e-12, 0)
          << "weight_decay " << weight_decay << " step " << step;
    }
    EXPECT_TENSOR_NEAR(MustRead(runner, m, DataType::kDouble), Vec({m_want[0], m_want[1]}), 1e-12,
                       0);
    EXPECT_TENSOR_NEAR(MustRead(runner, v, DataType::kDouble), Vec({v_want[0], v_want[1]}), 1e-12,
                       0);
    if (weight_decay == 0) {
      EXPECT_TENSOR_EQ(MustRead(runner, var, DataType::kDouble),
                       MustRead(runner, plain, DataType::kDouble));
    }
  }
}

// Float32 variables large enough for the parallel path, against a reference loop.
TEST(ApplyOpsTest, LargeFloatVariablesMatchAReferenceLoop) {
  const int64_t n = 70'001;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> w(n), g(n);
  for (int64_t i = 0; i < n; ++i) {
    w[i] = dist(rng);
    g[i] = dist(rng);
  }
  for (int threads : {1, 2}) {
    KernelRunner runner(threads);
    // Momentum.
    Tensor var = MakeVariable(runner, "w", Tensor::FromVector(w));
    Tensor accum = MakeVariable(runner, "a", Tensor::FromVector(std::vector<float>(n, 0.5f)));
    ASSERT_TRUE(runner
                    .Run("ResourceApplyMomentum", {var, accum, Tensor::Scalar(0.05f),
                                                   Tensor::FromVector(g), Tensor::Scalar(0.9f)})
                    .ok());
    std::vector<float> want_w(n), want_a(n);
    for (int64_t i = 0; i < n; ++i) {
      want_a[i] = 0.5f * 0.9f + g[i];
      want_w[i] = w[i] - 0.05f * want_a[i];
    }
    EXPECT_TENSOR_NEAR(MustRead(runner, accum, DataType::kFloat), Tensor::FromVector(want_a));
    EXPECT_TENSOR_NEAR(MustRead(runner, var, DataType::kFloat), Tensor::FromVector(want_w));
    // Adam, one step from zero moments.
    Tensor var2 = MakeVariable(runner, "w2", Tensor::FromVector(w));
    Tensor m = MakeVariable(runner, "m", Tensor::FromVector(std::vector<float>(n, 0)));
    Tensor v = MakeVariable(runner, "v", Tensor::FromVector(std::vector<float>(n, 0)));
    ASSERT_TRUE(runner
                    .Run("ResourceApplyAdam",
                         {var2, m, v, Tensor::Scalar(0.9f), Tensor::Scalar(0.999f),
                          Tensor::Scalar(0.01f), Tensor::Scalar(0.9f), Tensor::Scalar(0.999f),
                          Tensor::Scalar(1e-7f), Tensor::FromVector(g)})
                    .ok());
    const float lr_t = 0.01f * std::sqrt(1 - 0.999f) / (1 - 0.9f);
    for (int64_t i = 0; i < n; ++i) {
      float m_i = 0.1f * g[i], v_i = 0.001f * g[i] * g[i];
      want_w[i] = w[i] - lr_t * m_i / (std::sqrt(v_i) + 1e-7f);
    }
    EXPECT_TENSOR_NEAR(MustRead(runner, var2, DataType::kFloat), Tensor::FromVector(want_w), 1e-5,
                       1e-4);
  }
}

TEST(ApplyOpsTest, ValuesReadBeforeAnUpdateKeepTheirValues) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "w", Vec({1, 2}));
  Tensor accum = MakeVariable(runner, "a", Vec({0, 0}));
  Tensor w_before = MustRead(runner, var, DataType::kDouble);
  Tensor a_before = MustRead(runner, accum, DataType::kDouble);
  ASSERT_TRUE(runner
                  .Run("ResourceApplyMomentum",
                       {var, accum, Tensor::Scalar(1.0), Vec({1, 1}), Tensor::Scalar(0.5)})
                  .ok());
  EXPECT_TENSOR_EQ(w_before, Vec({1, 2}));
  EXPECT_TENSOR_EQ(a_before, Vec({0, 0}));
  EXPECT_TENSOR_NEAR(MustRead(runner, var, DataType::kDouble), Vec({0, 1}), 1e-12, 0);
  ASSERT_TRUE(
      runner.Run("ResourceApplyGradientDescent", {var, Tensor::Scalar(1.0), Vec({1, 1})}).ok());
  EXPECT_TENSOR_EQ(w_before, Vec({1, 2}));
}

TEST(ApplyOpsTest, GradientShapeMismatchNamesTheNode) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "dense/w", Vec({1, 2}));
  Tensor accum = MakeVariable(runner, "dense/w/momentum", Vec({0, 0}));
  Status gd = runner.Run("ResourceApplyGradientDescent", {var, Tensor::Scalar(1.0), Vec({1, 2, 3})})
                  .status();
  EXPECT_TRUE(IsInvalidArgument(gd)) << gd;
  EXPECT_TRUE(Contains(gd, "node 'test_ResourceApplyGradientDescent'")) << gd;
  EXPECT_TRUE(Contains(gd, "[3]") && Contains(gd, "[2]")) << gd;
  Status momentum = runner
                        .Run("ResourceApplyMomentum",
                             {var, accum, Tensor::Scalar(1.0), Vec({1}), Tensor::Scalar(0.5)})
                        .status();
  EXPECT_TRUE(IsInvalidArgument(momentum)) << momentum;
  EXPECT_TRUE(Contains(momentum, "node 'test_ResourceApplyMomentum'")) << momentum;
  // The failed updates changed nothing.
  EXPECT_TENSOR_EQ(MustRead(runner, var, DataType::kDouble), Vec({1, 2}));
}

TEST(ApplyOpsTest, SlotShapeMismatchIsInvalidArgument) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "w", Vec({1, 2}));
  Tensor accum = MakeVariable(runner, "w/momentum", Vec({0, 0, 0}));
  Status status = runner
                      .Run("ResourceApplyMomentum",
                           {var, accum, Tensor::Scalar(1.0), Vec({1, 1}), Tensor::Scalar(0.5)})
                      .status();
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_TRUE(Contains(status, "'w/momentum'")) << status;
}

TEST(ApplyOpsTest, UninitializedSlotIsFailedPreconditionNamingIt) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "w", Vec({1, 2}));
  Tensor accum = MakeHandle(runner, "w/momentum", DataType::kDouble);
  Status momentum = runner
                        .Run("ResourceApplyMomentum",
                             {var, accum, Tensor::Scalar(1.0), Vec({1, 1}), Tensor::Scalar(0.5)})
                        .status();
  EXPECT_TRUE(IsFailedPrecondition(momentum)) << momentum;
  EXPECT_TRUE(Contains(momentum, "variable 'w/momentum' is not initialized")) << momentum;

  Tensor m = MakeVariable(runner, "w/m", Vec({0, 0}));
  Tensor v = MakeHandle(runner, "w/v", DataType::kDouble);
  Status adam =
      runner
          .Run("ResourceApplyAdam",
               {var, m, v, Tensor::Scalar(0.9), Tensor::Scalar(0.999), Tensor::Scalar(0.1),
                Tensor::Scalar(0.9), Tensor::Scalar(0.999), Tensor::Scalar(1e-8), Vec({1, 1})})
          .status();
  EXPECT_TRUE(IsFailedPrecondition(adam)) << adam;
  EXPECT_TRUE(Contains(adam, "variable 'w/v' is not initialized")) << adam;

  Tensor fresh = MakeHandle(runner, "fresh", DataType::kDouble);
  Status gd =
      runner.Run("ResourceApplyGradientDescent", {fresh, Tensor::Scalar(1.0), Vec({1})}).status();
  EXPECT_TRUE(IsFailedPrecondition(gd)) << gd;
  EXPECT_TRUE(Contains(gd, "variable 'fresh' is not initialized")) << gd;
}

TEST(ApplyOpsTest, DtypeMismatchAndNonScalarHyperparameters) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "w", Tensor::FromVector<float>({1, 2}));
  Status dtype =
      runner.Run("ResourceApplyGradientDescent", {var, Tensor::Scalar(1.0), Vec({1, 1})}).status();
  EXPECT_TRUE(IsInvalidArgument(dtype)) << dtype;
  EXPECT_TRUE(Contains(dtype, "float32") && Contains(dtype, "float64")) << dtype;

  Status lr = runner
                  .Run("ResourceApplyGradientDescent",
                       {var, Tensor::FromVector<float>({1, 1}), Tensor::FromVector<float>({1, 1})})
                  .status();
  EXPECT_TRUE(IsInvalidArgument(lr)) << lr;
  EXPECT_TRUE(Contains(lr, "test_ResourceApplyGradientDescent")) << lr;
}

}  // namespace
}  // namespace weft::kernels::state
