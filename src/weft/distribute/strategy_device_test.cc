// MirroredStrategy and OneDeviceStrategy on devices with memory of their own: the same training
// updates and all-reduces run over two CPU devices (one host memory: nothing may be copied) and
// over two TEST_ARENA devices (each its own memory, every tensor crossing memories going through a
// DeviceContext, counted; kernels and copies completing on each device's asynchronous stream),
// and give the same values.
#include <gtest/gtest.h>

#include "weft/distribute/cross_device_ops.h"
#include "weft/distribute/mirrored_variable.h"
#include "weft/distribute/strategy.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/testing/test_arena_device.h"

namespace weft::distribute {
namespace {

using Outputs = StatusOr<std::vector<Output>>;
using weft::testing::ArenaCopyStats;
using weft::testing::GetArenaCopyStats;
using weft::testing::kTestArenaDeviceType;
using weft::testing::ResetArenaCopyStats;

Tensor Vec(float a, float b) { return Tensor::FromVector<float>({a, b}); }

class StrategyDeviceTest : public ::testing::TestWithParam<std::string> {
 protected:
  bool arena() const { return GetParam() == kTestArenaDeviceType; }
  std::vector<std::string> devices() const { return testing::Devices(GetParam(), 2); }

  // Nothing copied among CPUs; among arenas, copies into device memory (from the host for an
  // all-reduce, from the other arena when reducing to one device) and out of it for the fetches.
  void ExpectCopies(const ArenaCopyStats& copies) const {
    if (arena()) {
      EXPECT_GT(copies.host_to_device + copies.device_to_device, 0);
      EXPECT_GT(copies.device_to_host, 0);
    } else {
      EXPECT_EQ(copies.total(), 0);
    }
  }
};

TEST_P(StrategyDeviceTest, MirroredTrainingStepsKeepEveryComponentEqual) {
  // w starts at (5, 5); each step every replica r computes the "gradient" (r + 1) * w and the
  // strategy subtracts their mean: w *= 1 - 1.5.
  auto strategy = MirroredStrategy::Create(devices()).value();
  Scope root = Scope::NewRootScope();
  auto w = strategy->CreateVariable(root, "w", TensorShape({2}), DataType::kFloat,
                                    Initializer::Constant(5), VariableSynchronization::kOnWrite,
                                    VariableAggregation::kMean);
  ASSERT_TRUE(w.ok()) << w.status();
  auto updates = strategy->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    const Variable& local = (*w)->component(ctx.replica_id());
    auto gradient = ops::Mul(scope, local.Read(scope), ops::Const(scope, ctx.replica_id() + 1.0f));
    WEFT_ASSIGN_OR_RETURN(Output op, (*w)->Update(scope, UpdateKind::kAssignSub, gradient, &ctx));
    return std::vector<Output>{op};
  });
  ASSERT_TRUE(updates.ok()) << updates.status();
  std::vector<Output> reads;
  for (const Variable& component : (*w)->components()) reads.push_back(component.Read(root));
  auto session = testing::MakeSession(root, 2, GetParam());
  ASSERT_NE(session, nullptr);
  testing::RunTargets(*session, {(*w)->initializer()});
  float expected = 5;
  for (int step = 0; step < 3; ++step) {
    ResetArenaCopyStats();
    testing::RunTargets(*session, (*updates)[0].values());
    if (step > 0) ExpectCopies(GetArenaCopyStats());  // the first step also builds the kernels
    expected *= -0.5f;
  }
  std::vector<Tensor> components = testing::Fetch(*session, reads);
  ASSERT_EQ(components.size(), 2u);
  EXPECT_TENSOR_EQ(components[0], Vec(expected, expected));
  EXPECT_TENSOR_EQ(components[1], Vec(expected, expected));
}

TEST_P(StrategyDeviceTest, OneDeviceTrainingStepsUpdateTheVariableOnItsDevice) {
  // On device 1, not the session's default: w starts at (4, 4) and each step subtracts w / 2.
  auto strategy = OneDeviceStrategy::Create(devices()[1]);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  Scope root = Scope::NewRootScope();
  auto w = (*strategy)->CreateVariable(root, "w", TensorShape({2}), DataType::kFloat,
                                       Initializer::Constant(4), VariableSynchronization::kOnWrite,
                                       VariableAggregation::kNone);
  ASSERT_TRUE(w.ok()) << w.status();
  auto updates = (*strategy)->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    EXPECT_EQ(ctx.device(), devices()[1]);
    auto gradient = ops::Mul(scope, (*w)->component(0).Read(scope), ops::Const(scope, 0.5f));
    WEFT_ASSIGN_OR_RETURN(Output op, (*w)->Update(scope, UpdateKind::kAssignSub, gradient, &ctx));
    return std::vector<Output>{op};
  });
  ASSERT_TRUE(updates.ok()) << updates.status();
  Output read = (*w)->component(0).Read(root);
  auto session = testing::MakeSession(root, 2, GetParam());
  ASSERT_NE(session, nullptr);
  testing::RunTargets(*session, {(*w)->initializer()});
  for (int step = 0; step < 3; ++step) testing::RunTargets(*session, (*updates)[0].values());
  std::vector<Tensor> value = testing::Fetch(*session, {read});
  ASSERT_EQ(value.size(), 1u);
  EXPECT_TENSOR_EQ(value[0], Vec(0.5f, 0.5f));
}

TEST_P(StrategyDeviceTest, ReplicaAllReducesAndCrossReplicaReducesAgree) {
  for (bool all_reduce : {true, false}) {
    auto strategy = MirroredStrategy::Create(
        devices(), all_reduce ? nullptr : std::make_unique<ReductionToOneDevice>());
    ASSERT_TRUE(strategy.ok()) << strategy.status();
    Scope root = Scope::NewRootScope();
    auto result = (*strategy)->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
      auto x = ops::Const(scope, Vec(ctx.replica_id() + 1.0f, 1));
      WEFT_ASSIGN_OR_RETURN(Output sum, ctx.AllReduce(ReduceOp::kSum, x));
      WEFT_ASSIGN_OR_RETURN(Output mean, ctx.AllReduce(ReduceOp::kMean, x));
      return std::vector<Output>{sum, mean};
    });
    ASSERT_TRUE(result.ok()) << result.status();
    auto reduced = (*strategy)->Reduce(root, ReduceOp::kSum, (*result)[0]);
    ASSERT_TRUE(reduced.ok()) << reduced.status();
    auto session = testing::MakeSession(root, 2, GetParam());
    ASSERT_NE(session, nullptr);
    std::vector<Output> fetches = {(*result)[0].value(0), (*result)[0].value(1),
                                   (*result)[1].value(0), (*result)[1].value(1), *reduced};
    testing::Fetch(*session, fetches);  // builds the kernels
    ResetArenaCopyStats();
    auto values = testing::Fetch(*session, fetches);
    ASSERT_EQ(values.size(), 5u);
    EXPECT_TENSOR_EQ(values[0], Vec(3, 2)) << all_reduce;
    EXPECT_TENSOR_EQ(values[1], Vec(3, 2));
    EXPECT_TENSOR_EQ(values[2], Vec(1.5f, 1));
    EXPECT_TENSOR_EQ(values[3], Vec(1.5f, 1));
    EXPECT_TENSOR_EQ(values[4], Vec(6, 4));
    ExpectCopies(GetArenaCopyStats());
  }
}

INSTANTIATE_TEST_SUITE_P(DeviceTypes, StrategyDeviceTest,
                         ::testing::Values(std::string("CPU"), std::string(kTestArenaDeviceType)));

}  // namespace
}  // namespace weft::distribute
