// CentralStorageStrategy on 2 replicas: where its variables live and of which kind, that every
// replica shares the one component, replica-context updates merged into one (values checked by
// running the graph in a 3-device DirectSession), and the errors of bad devices and refused
// updates. Training through the optimizer is checked in train/optimizer_test.cc.
#include "weft/distribute/central_storage_strategy.h"

#include <gtest/gtest.h>

#include "weft/distribute/aggregating_variable.h"
#include "weft/distribute/sync_on_read_variable.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using testing::CpuDevice;
using testing::CpuDevices;
using Outputs = StatusOr<std::vector<Output>>;

TEST(CentralStorageStrategyTest, VariablesLiveOnceOnTheVariableDeviceAndOnReadOnesPerReplica) {
  auto strategy = CentralStorageStrategy::Create({"/cpu:1", "/cpu:2"}).value();
  EXPECT_EQ(strategy->variable_device(), CpuDevice(0));
  EXPECT_EQ(strategy->devices(), (std::vector<std::string>{CpuDevice(1), CpuDevice(2)}));
  Scope root = Scope::NewRootScope();
  auto w = strategy->CreateVariable(root, "w", TensorShape({2}), DataType::kFloat,
                                    Initializer::Constant(1));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_NE(dynamic_cast<AggregatingVariable*>(w->get()), nullptr);
  EXPECT_EQ((*w)->devices(), std::vector<std::string>{CpuDevice(0)});
  EXPECT_EQ(&(*w)->ReplicaComponent(1), &(*w)->component(0));
  auto total =
      strategy->CreateVariable(root, "total", TensorShape(), DataType::kFloat, Initializer::Zeros(),
                               VariableSynchronization::kOnRead, VariableAggregation::kSum);
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_NE(dynamic_cast<SyncOnReadVariable*>(total->get()), nullptr);
  EXPECT_EQ((*total)->devices(), strategy->devices());
  // A slot beside `w` lives where `w` lives.
  auto slot = strategy->CreateVariableInScope(root, "w/Momentum", TensorShape({2}),
                                              DataType::kFloat, Initializer::Zeros(), w->get());
  ASSERT_TRUE(slot.ok()) << slot.status();
  EXPECT_EQ((*slot)->devices(), std::vector<std::string>{CpuDevice(0)});
  EXPECT_EQ(strategy->FindVariable((*slot)->component(0)), *slot);
  EXPECT_EQ(strategy->variables().size(), 1u);  // only the one made as inside Scope()
}

TEST(CentralStorageStrategyTest, ReplicasInScopeShareOneComponentReadWhereItLives) {
  auto strategy = CentralStorageStrategy::Create(CpuDevices(2), "/cpu:2").value();
  Scope root = Scope::NewRootScope();
  StrategyScope in_scope = strategy->Scope();
  std::vector<Variable> seen(2);
  auto out = strategy->Run(root, [&](ReplicaContext& context, const Scope& scope) -> Outputs {
    Variable v =
        Variable::Create(scope, "v", TensorShape({2}), DataType::kFloat, Initializer::Constant(3));
    seen[context.replica_id()] = v;
    // Doubled on the replica's own device, from a read made where the variable lives.
    return std::vector<Output>{ops::Mul(scope, v.Read(scope), 2.0f)};
  });
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(strategy->variables().size(), 1u);
  EXPECT_EQ(seen[0].handle().node(), seen[1].handle().node());
  EXPECT_EQ(seen[0].handle().node()->requested_device(), CpuDevice(2));
  auto session = testing::MakeSession(root, 3);
  ASSERT_NE(session, nullptr);
  testing::RunTargets(*session, {strategy->variables()[0]->initializer()});
  std::vector<Tensor> values = testing::Fetch(*session, (*out)[0].values());
  ASSERT_EQ(values.size(), 2u);
  for (const Tensor& value : values) {
    EXPECT_TENSOR_EQ(value, Tensor::FromVector<float>({6, 6}));
  }
}

// A 2-replica AggregatingVariable starting at (5, 5): replica r assigns-add (r + 1, r + 1).
StatusOr<Tensor> AddOnTwoReplicas(VariableAggregation aggregation, bool constant = false) {
  auto strategy = CentralStorageStrategy::Create(CpuDevices(2)).value();
  Scope root = Scope::NewRootScope();
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<DistributedVariable> v,
                        strategy->CreateVariable(root, "v", TensorShape({2}), DataType::kFloat,
                                                 Initializer::Constant(5),
                                                 VariableSynchronization::kOnWrite, aggregation));
  WEFT_ASSIGN_OR_RETURN(
      std::vector<PerReplica> ops,
      strategy->Run(root, [&](ReplicaContext& context, const Scope& scope) -> Outputs {
        const float x = context.replica_id() + 1.0f;
        Input value = constant ? Input(Tensor::FromVector<float>({1, 1}))
                               : Input(ops::Const(scope, Tensor::FromVector<float>({x, x})));
        WEFT_ASSIGN_OR_RETURN(Output op, v->AssignAdd(scope, value, &context));
        return std::vector<Output>{op};
      }));
  Output read = v->component(0).Read(root);
  auto session = testing::MakeSession(root, 2);
  if (session == nullptr) return Internal("no session");
  testing::RunTargets(*session, {v->initializer()});
  testing::RunTargets(*session, ops[0].values());
  std::vector<Tensor> values = testing::Fetch(*session, {read});
  if (values.size() != 1) return Internal("the read gave ", values.size(), " tensors");
  return values[0];
}

TEST(CentralStorageStrategyTest, ReplicaUpdatesAreCombinedAndAppliedOnce) {
  auto sum = AddOnTwoReplicas(VariableAggregation::kSum);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_TENSOR_EQ(*sum, Tensor::FromVector<float>({8, 8}));  // 5 + 1 + 2
  auto mean = AddOnTwoReplicas(VariableAggregation::kMean);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_TENSOR_EQ(*mean, Tensor::FromVector<float>({6.5f, 6.5f}));
  auto first = AddOnTwoReplicas(VariableAggregation::kOnlyFirstReplica);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TENSOR_EQ(*first, Tensor::FromVector<float>({6, 6}));
  // The mean of two equal constants is the constant, added once.
  auto constant = AddOnTwoReplicas(VariableAggregation::kMean, /*constant=*/true);
  ASSERT_TRUE(constant.ok()) << constant.status();
  EXPECT_TENSOR_EQ(*constant, Tensor::FromVector<float>({6, 6}));
}

TEST(CentralStorageStrategyTest, RefusedUpdatesNameTheVariableAndTheRule) {
  auto none = AddOnTwoReplicas(VariableAggregation::kNone);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("AggregatingVariable 'v'"), std::string::npos)
      << none.status();
  EXPECT_NE(none.status().message().find("needs an aggregation"), std::string::npos);
  auto sum_of_constants = AddOnTwoReplicas(VariableAggregation::kSum, /*constant=*/true);
  ASSERT_FALSE(sum_of_constants.ok());
  EXPECT_NE(sum_of_constants.status().message().find("constant"), std::string::npos)
      << sum_of_constants.status();
}

TEST(CentralStorageStrategyTest, BadDevicesAreNamed) {
  auto none = CentralStorageStrategy::Create({});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("at least one device"), std::string::npos);
  auto twice = CentralStorageStrategy::Create({"/cpu:0", "/device:CPU:0"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("same device"), std::string::npos) << twice.status();
  auto bad = CentralStorageStrategy::Create({"/cpu:0"}, "/cpu:zero");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cpu:zero"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace weft::distribute
