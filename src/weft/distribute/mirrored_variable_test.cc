// MirroredVariable in replica context on 2 replicas: each aggregation's allowed updates (values
// checked by running the graph in a 2-device DirectSession) and refused ones (errors naming the
// variable and the rule). The cross-replica rows are in distributed_variable_test.cc.
#include "weft/distribute/mirrored_variable.h"

#include <gtest/gtest.h>

#include "weft/distribute/strategy.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using testing::CpuDevices;
using Outputs = StatusOr<std::vector<Output>>;

Tensor Vec(float a, float b) { return Tensor::FromVector<float>({a, b}); }

// The value replica r passes: a tensor (r + 1, r + 1) built in its scope, or a constant.
using ValueFn = std::function<Input(int r, const Scope& scope)>;
Input ReplicaTensor(int r, const Scope& scope) {
  return ops::Const(scope, Vec(r + 1.0f, r + 1.0f));
}

struct Outcome {
  Status status;
  std::vector<Tensor> components;  // after init and the update, when status is OK
  int collectives = 0;
};

// A 2-replica MirroredVariable starting at (5, 5): every replica applies `kind` with its value.
Outcome UpdateOnTwoReplicas(VariableAggregation aggregation, UpdateKind kind, const ValueFn& value,
                            std::unique_ptr<CrossDeviceOps> cross_device_ops = nullptr) {
  Outcome outcome;
  auto strategy = MirroredStrategy::Create(CpuDevices(2), std::move(cross_device_ops)).value();
  Scope root = Scope::NewRootScope();
  auto v = strategy->CreateVariable(root, "v", TensorShape({2}), DataType::kFloat,
                                    Initializer::Constant(5), VariableSynchronization::kOnWrite,
                                    aggregation);
  EXPECT_TRUE(v.ok()) << v.status();
  auto updates = strategy->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    WEFT_ASSIGN_OR_RETURN(Output op,
                          (*v)->Update(scope, kind, value(ctx.replica_id(), scope), &ctx));
    return std::vector<Output>{op};
  });
  if (!updates.ok()) {
    outcome.status = updates.status();
    return outcome;
  }
  for (int id = 0; id < root.graph()->num_node_ids(); ++id) {
    Node* node = root.graph()->node(id);
    if (node != nullptr && node->type_string() == "CollectiveAllReduce") ++outcome.collectives;
  }
  std::vector<Output> reads;
  for (const Variable& component : (*v)->components()) reads.push_back(component.Read(root));
  auto session = testing::MakeSession(root, 2);
  if (session == nullptr) return outcome;
  testing::RunTargets(*session, {(*v)->initializer()});
  testing::RunTargets(*session, (*updates)[0].values());
  outcome.components = testing::Fetch(*session, reads);
  return outcome;
}

void ExpectBoth(const Outcome& outcome, const Tensor& expected) {
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  ASSERT_EQ(outcome.components.size(), 2u);
  EXPECT_TENSOR_EQ(outcome.components[0], expected);
  EXPECT_TENSOR_EQ(outcome.components[1], expected);
}

TEST(MirroredVariableTest, SumAddsEveryReplicasUpdateToEveryComponent) {
  Outcome add =
      UpdateOnTwoReplicas(VariableAggregation::kSum, UpdateKind::kAssignAdd, ReplicaTensor);
  ExpectBoth(add, Vec(8, 8));  // 5 + (1 + 2)
  EXPECT_EQ(add.collectives, 2);
  ExpectBoth(UpdateOnTwoReplicas(VariableAggregation::kSum, UpdateKind::kAssign, ReplicaTensor),
             Vec(3, 3));
  ExpectBoth(UpdateOnTwoReplicas(VariableAggregation::kSum, UpdateKind::kAssignSub, ReplicaTensor,
                                 std::make_unique<ReductionToOneDevice>()),
             Vec(2, 2));
}

TEST(MirroredVariableTest, MeanAveragesTensorsAndAppliesConstantsUnreduced) {
  ExpectBoth(UpdateOnTwoReplicas(VariableAggregation::kMean, UpdateKind::kAssignAdd, ReplicaTensor),
             Vec(6.5f, 6.5f));
  Outcome constant = UpdateOnTwoReplicas(VariableAggregation::kMean, UpdateKind::kAssignAdd,
                                         [](int, const Scope&) { return Input(Vec(1, 1)); });
  ExpectBoth(constant, Vec(6, 6));
  EXPECT_EQ(constant.collectives, 0);
}

TEST(MirroredVariableTest, OnlyFirstReplicaAppliesReplicaZerosUpdateEverywhere) {
  ExpectBoth(UpdateOnTwoReplicas(VariableAggregation::kOnlyFirstReplica, UpdateKind::kAssignSub,
                                 ReplicaTensor),
             Vec(4, 4));
  ExpectBoth(UpdateOnTwoReplicas(VariableAggregation::kOnlyFirstReplica, UpdateKind::kAssign,
                                 [](int r, const Scope&) { return Input(Vec(r + 7.0f, 0)); }),
             Vec(7, 0));
}

TEST(MirroredVariableTest, NoneRefusesUpdatesInReplicaContext) {
  for (UpdateKind kind : {UpdateKind::kAssign, UpdateKind::kAssignAdd, UpdateKind::kAssignSub}) {
    Status s = UpdateOnTwoReplicas(VariableAggregation::kNone, kind, ReplicaTensor).status;
    EXPECT_TRUE(IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("MirroredVariable 'v'"), std::string::npos) << s;
    EXPECT_NE(s.message().find(UpdateKindName(kind)), std::string::npos) << s;
    EXPECT_NE(s.message().find("NONE"), std::string::npos) << s;
  }
}

TEST(MirroredVariableTest, SumRefusesAConstant) {
  Status s =
      UpdateOnTwoReplicas(VariableAggregation::kSum, UpdateKind::kAssignAdd, [](int, const Scope&) {
        return Input(Vec(1, 1));
      }).status;
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("MirroredVariable 'v'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("constant"), std::string::npos) << s;
}

TEST(MirroredVariableTest, IntegerSumFallsBackToOneDevice) {
  auto strategy = MirroredStrategy::Create(CpuDevices(2)).value();
  Scope root = Scope::NewRootScope();
  auto v = strategy->CreateVariable(root, "steps", TensorShape({}), DataType::kInt64,
                                    Initializer::Zeros(), VariableSynchronization::kAuto,
                                    VariableAggregation::kSum);
  ASSERT_TRUE(v.ok()) << v.status();
  auto updates = strategy->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    auto step = ops::Const(scope, Tensor::Scalar<int64_t>(ctx.replica_id() + 1));
    WEFT_ASSIGN_OR_RETURN(Output op, (*v)->AssignAdd(scope, step, &ctx));
    return std::vector<Output>{op};
  });
  ASSERT_TRUE(updates.ok()) << updates.status();
  auto read = (*v)->Read(root, nullptr);
  ASSERT_TRUE(read.ok());
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  testing::RunTargets(*session, {(*v)->initializer()});
  testing::RunTargets(*session, (*updates)[0].values());
  EXPECT_TENSOR_EQ(testing::Fetch(*session, {*read})[0], Tensor::Scalar<int64_t>(3));
}

TEST(MirroredVariableTest, ReplicaReadsSeeTheLocalComponentAndOneReplicaNeedsNoAggregation) {
  auto strategy = MirroredStrategy::Create(CpuDevices(2)).value();
  Scope root = Scope::NewRootScope();
  auto v =
      strategy->CreateVariable(root, "v", TensorShape({2}), DataType::kFloat, Initializer::Zeros());
  ASSERT_TRUE(v.ok());
  auto reads = strategy->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    WEFT_ASSIGN_OR_RETURN(Output read, (*v)->Read(scope, &ctx));
    return std::vector<Output>{read};
  });
  ASSERT_TRUE(reads.ok()) << reads.status();
  Output bump = (*v)->component(1).Assign(root, Vec(4, 4));
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  testing::RunTargets(*session, {(*v)->initializer()});
  testing::RunTargets(*session, {bump});
  auto values = testing::Fetch(*session, (*reads)[0].values());
  EXPECT_TENSOR_EQ(values[0], Vec(0, 0));
  EXPECT_TENSOR_EQ(values[1], Vec(4, 4));

  auto one = OneDeviceStrategy::Create("/cpu:0").value();
  Scope other = Scope::NewRootScope();
  auto w =
      one->CreateVariable(other, "w", TensorShape({2}), DataType::kFloat, Initializer::Zeros());
  ASSERT_TRUE(w.ok());
  auto updates = one->Run(other, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    WEFT_ASSIGN_OR_RETURN(Output op, (*w)->AssignAdd(scope, Vec(1, 2), &ctx));
    return std::vector<Output>{op};
  });
  EXPECT_TRUE(updates.ok()) << updates.status();
}

TEST(MirroredVariableTest, AContextOfAnotherStrategyIsRefused) {
  auto two = MirroredStrategy::Create(CpuDevices(2)).value();
  auto three = MirroredStrategy::Create(CpuDevices(3)).value();
  Scope root = Scope::NewRootScope();
  auto v = two->CreateVariable(root, "v", TensorShape({2}), DataType::kFloat, Initializer::Zeros(),
                               VariableSynchronization::kOnWrite, VariableAggregation::kSum);
  ASSERT_TRUE(v.ok());
  Status s = three
                 ->Run(root,
                       [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
                         WEFT_ASSIGN_OR_RETURN(Output read, (*v)->Read(scope, &ctx));
                         return std::vector<Output>{read};
                       })
                 .status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("MirroredVariable 'v' lives on"), std::string::npos) << s;
}

}  // namespace
}  // namespace weft::distribute
