// SyncOnReadVariable in replica context on 2 replicas: reads and updates touch only the local
// component whatever the aggregation, and a cross-replica read then combines the components.
// The cross-replica update rules are in distributed_variable_test.cc.
#include "weft/distribute/sync_on_read_variable.h"

#include <gtest/gtest.h>

#include "weft/distribute/strategy.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using testing::CpuDevices;
using Outputs = StatusOr<std::vector<Output>>;

TEST(SyncOnReadVariableTest, ReplicaUpdatesStayLocalAndCrossReplicaReadsCombine) {
  struct Case {
    VariableAggregation aggregation;
    float expected_read;
  };
  // Components start at 1; replica r adds r + 1 (-> 2 and 3), then reads its own component.
  for (const Case& c : {Case{VariableAggregation::kSum, 5}, Case{VariableAggregation::kMean, 2.5f},
                        Case{VariableAggregation::kOnlyFirstReplica, 2}}) {
    auto strategy = MirroredStrategy::Create(CpuDevices(2)).value();
    Scope root = Scope::NewRootScope();
    auto v = strategy->CreateVariable(root, "total", TensorShape({}), DataType::kFloat,
                                      Initializer::Ones(), VariableSynchronization::kOnRead,
                                      c.aggregation);
    ASSERT_TRUE(v.ok()) << v.status();
    auto result = strategy->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
      auto delta = ops::Const(scope, static_cast<float>(ctx.replica_id() + 1));
      WEFT_ASSIGN_OR_RETURN(Output add, (*v)->AssignAdd(scope, delta, &ctx));
      WEFT_ASSIGN_OR_RETURN(Output read, (*v)->Read(scope.WithControlDependencies({add}), &ctx));
      return std::vector<Output>{add, read};
    });
    ASSERT_TRUE(result.ok()) << result.status();
    auto combined = (*v)->Read(root, nullptr);
    ASSERT_TRUE(combined.ok()) << combined.status();
    auto session = testing::MakeSession(root, 2);
    ASSERT_NE(session, nullptr);
    testing::RunTargets(*session, {(*v)->initializer()});
    auto local = testing::Fetch(*session, (*result)[1].values());
    EXPECT_TENSOR_EQ(local[0], Tensor::Scalar(2.0f));
    EXPECT_TENSOR_EQ(local[1], Tensor::Scalar(3.0f));
    EXPECT_TENSOR_EQ(testing::Fetch(*session, {*combined})[0], Tensor::Scalar(c.expected_read));
  }
}

TEST(SyncOnReadVariableTest, ReplicaAssignWithNoneIsAllowed) {
  auto strategy = MirroredStrategy::Create(CpuDevices(2)).value();
  Scope root = Scope::NewRootScope();
  auto v =
      strategy->CreateVariable(root, "v", TensorShape({}), DataType::kFloat, Initializer::Zeros(),
                               VariableSynchronization::kOnRead, VariableAggregation::kNone);
  ASSERT_TRUE(v.ok());
  auto result = strategy->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    WEFT_ASSIGN_OR_RETURN(Output op,
                          (*v)->Assign(scope, static_cast<float>(ctx.replica_id() + 4), &ctx));
    return std::vector<Output>{op};
  });
  ASSERT_TRUE(result.ok()) << result.status();
  std::vector<Output> reads = {(*v)->component(0).Read(root), (*v)->component(1).Read(root)};
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  testing::RunTargets(*session, {(*v)->initializer()});
  testing::RunTargets(*session, (*result)[0].values());
  auto values = testing::Fetch(*session, reads);
  EXPECT_TENSOR_EQ(values[0], Tensor::Scalar(4.0f));
  EXPECT_TENSOR_EQ(values[1], Tensor::Scalar(5.0f));
}

}  // namespace
}  // namespace weft::distribute
