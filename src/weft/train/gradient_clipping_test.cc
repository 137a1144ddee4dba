// Clipping by global norm: the closed form on one device (above and below the clip, a non-finite
// norm, a sparse gradient's rows), and under 2 mirrored replicas (and central storage) the same
// training as one device fed the union of the replicas' batches, with both replicas' copies
// bitwise equal.
#include "weft/train/gradient_clipping.h"

#include <cmath>

#include <gtest/gtest.h>

#include "weft/distribute/central_storage_strategy.h"
#include "weft/runtime/session.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/train/optimizer.h"
#include "weft/train/testing/optimizer_test_util.h"

namespace weft::train {
namespace {

// One gradient-descent step (rate 1) clipped to `clip_norm` on loss = sum(a * ga) + sum(b * gb),
// whose gradients are ga and gb, from a = b = 0; returns a and b after it.
std::pair<std::vector<double>, std::vector<double>> OneClippedStep(const std::vector<double>& ga,
                                                                   const std::vector<double>& gb,
                                                                   double clip_norm) {
  Scope root = Scope::NewRootScope();
  const auto size = [](const std::vector<double>& v) { return static_cast<int64_t>(v.size()); };
  Variable a =
      Variable::Create(root, "a", TensorShape({size(ga)}), DataType::kDouble, Initializer::Zeros());
  Variable b =
      Variable::Create(root, "b", TensorShape({size(gb)}), DataType::kDouble, Initializer::Zeros());
  Output loss = ops::Add(
      root,
      ops::Sum(root, ops::Mul(root, a.Read(root), ops::Const(root, Tensor::FromVector(ga))), 0),
      ops::Sum(root, ops::Mul(root, b.Read(root), ops::Const(root, Tensor::FromVector(gb))), 0));
  auto optimizer = NewGradientDescentOptimizer(1.0);
  EXPECT_TRUE(optimizer->SetGlobalClipNorm(clip_norm).ok());
  auto train_op = optimizer->Minimize(root, loss, {a, b});
  EXPECT_TRUE(train_op.ok()) << train_op.status();
  Output reads[2] = {a.Read(root.WithControlDependencies({*train_op})),
                     b.Read(root.WithControlDependencies({*train_op}))};
  auto session = NewSession(SessionOptions()).value();
  EXPECT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  std::vector<std::string> inits = {a.initializer().name(), b.initializer().name()};
  for (const Output& init : optimizer->initializers()) inits.push_back(init.name());
  EXPECT_TRUE(session->Run({}, {}, inits, &outputs).ok());
  Status s = session->Run({}, {reads[0].name(), reads[1].name()}, {}, &outputs);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return {};
  auto as_vector = [](const Tensor& t) {
    auto flat = t.flat<double>();
    return std::vector<double>(flat.begin(), flat.end());
  };
  return {as_vector(outputs[0]), as_vector(outputs[1])};
}

TEST(GradientClippingTest, AboveTheClipEveryGradientShrinksByOneFactor) {
  // Global norm sqrt(3^2 + 4^2) = 5, clipped to 1: every gradient times 0.2.
  auto [a, b] = OneClippedStep({3, 0}, {4}, 1.0);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NEAR(a[0], -0.6, 1e-15);
  EXPECT_EQ(a[1], 0.0);
  EXPECT_NEAR(b[0], -0.8, 1e-15);
}

TEST(GradientClippingTest, BelowTheClipGradientsAreUnchanged) {
  auto [a, b] = OneClippedStep({3, 0}, {4}, 10.0);
  EXPECT_EQ(a, (std::vector<double>{-3, 0}));
  EXPECT_EQ(b, (std::vector<double>{-4}));
  // Exactly at the clip too: the factor is 1.
  auto [c, d] = OneClippedStep({3, 0}, {4}, 5.0);
  EXPECT_EQ(c, (std::vector<double>{-3, 0}));
}

TEST(GradientClippingTest, ANonFiniteNormMakesEveryGradientNaN) {
  auto [a, b] = OneClippedStep({3, 0}, {INFINITY}, 1.0);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_TRUE(std::isnan(a[0]) && std::isnan(a[1]));
  EXPECT_TRUE(std::isnan(b[0]));
}

// A sparse gradient's rows count as given: ids {0, 0} give two rows of 1 (norm sqrt(2)), where
// the dense gradient they stand for has a single 2 (norm 2).
TEST(GradientClippingTest, ASparseGradientCountsItsRowsAsGiven) {
  for (bool sparse : {true, false}) {
    Scope root = Scope::NewRootScope();
    Variable table = Variable::Create(root, "table", TensorShape({3, 1}), DataType::kDouble,
                                      Initializer::Constant(0.5));
    Output ids = ops::Const(root, Tensor::FromVector<int64_t>({0, 0}));
    Output rows = sparse ? ops::ResourceGather(root, table.handle(), ids)
                         : ops::GatherV2(root, table.Read(root), ids, ops::Const(root, 0));
    Output loss = ops::Sum(root, rows, {0, 1});
    auto optimizer = NewGradientDescentOptimizer(1.0);
    ASSERT_TRUE(optimizer->SetGlobalClipNorm(1.0).ok());
    auto train_op = optimizer->Minimize(root, loss, {table});
    ASSERT_TRUE(train_op.ok()) << train_op.status();
    Output read = table.Read(root.WithControlDependencies({*train_op}));
    auto session = NewSession(SessionOptions()).value();
    ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
    std::vector<Tensor> outputs;
    std::vector<std::string> inits = {table.initializer().name()};
    for (const Output& init : optimizer->initializers()) inits.push_back(init.name());
    ASSERT_TRUE(session->Run({}, {}, inits, &outputs).ok());
    ASSERT_TRUE(session->Run({}, {read.name()}, {}, &outputs).ok());
    const double moved = sparse ? 2 / std::sqrt(2.0) : 1.0;
    EXPECT_TENSOR_NEAR(outputs[0],
                       Tensor::FromVector<double>({0.5 - moved, 0.5, 0.5}, TensorShape({3, 1})),
                       1e-12, 0)
        << (sparse ? "sparse" : "dense");
  }
}

TEST(GradientClippingTest, GlobalNormOfNoValuesIsZero) {
  Scope root = Scope::NewRootScope();
  Output norm = GlobalNorm(root, {});
  Output two =
      GlobalNorm(root, {ops::Const(root, Tensor::FromVector<float>({3, 4})),
                        ops::Const(root, Tensor::FromVector<double>({12}, TensorShape({1, 1})))});
  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {norm.name(), two.name()}, {}, &outputs).ok());
  EXPECT_EQ(*outputs[0].data<double>(), 0.0);
  EXPECT_EQ(*outputs[1].data<double>(), 13.0);
}

using testing::FitClassifier;
using testing::FitResult;
using testing::OptimizerConfig;

// Every replica's copy of the hidden kernel is bitwise the same.
void ExpectCopiesEqual(const FitResult& run, size_t copies) {
  ASSERT_EQ(run.hidden_kernel.size(), copies);
  for (size_t r = 1; r < copies; ++r) {
    EXPECT_TENSOR_EQ(run.hidden_kernel[r], run.hidden_kernel[0]) << "replica " << r;
  }
}

// 2 mirrored replicas, each fed half of every global batch, against one device fed the whole:
// clipped hard (every step's norm is above 0.05) and not at all (a clip of 1e6 is never reached,
// and changes nothing bitwise), for momentum and for AdamW.
TEST(MirroredGradientClippingTest, TwoReplicasClipLikeOneDeviceAndStayBitwiseEqual) {
  std::unique_ptr<distribute::Strategy> mirrored = testing::Mirrored(2);
  for (bool adamw : {false, true}) {
    SCOPED_TRACE(adamw ? "adamw" : "momentum");
    const FitResult unclipped = FitClassifier(nullptr, {.adamw = adamw});
    const FitResult one = FitClassifier(nullptr, {.adamw = adamw, .clip_norm = 0.05});
    const FitResult two = FitClassifier(mirrored.get(), {.adamw = adamw, .clip_norm = 0.05});
    testing::ExpectSameTraining(one, two);
    ExpectCopiesEqual(two, 2);
    // The clip changed training.
    EXPECT_GT(testing::MaxPredictionGap(one, unclipped), 1e-3);

    const FitResult high = FitClassifier(nullptr, {.adamw = adamw, .clip_norm = 1e6});
    ASSERT_TRUE(high.status.ok()) << high.status;
    EXPECT_EQ(high.predictions, unclipped.predictions);
    const FitResult two_high = FitClassifier(mirrored.get(), {.adamw = adamw, .clip_norm = 1e6});
    testing::ExpectSameTraining(unclipped, two_high);
    ExpectCopiesEqual(two_high, 2);
  }
}

// Central storage: the replicas' gradients reduced onto the host, clipped there once.
TEST(MirroredGradientClippingTest, CentralStorageClipsLikeOneDevice) {
  auto central = distribute::CentralStorageStrategy::Create({"/cpu:0", "/cpu:1"});
  ASSERT_TRUE(central.ok()) << central.status();
  const OptimizerConfig config = {.adamw = false, .clip_norm = 0.05};
  testing::ExpectSameTraining(FitClassifier(nullptr, config),
                              FitClassifier(central->get(), config));
}

}  // namespace
}  // namespace weft::train
