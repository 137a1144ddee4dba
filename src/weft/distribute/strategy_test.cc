// Strategy: device lists, Run's naming, placement, turn-taking and error reporting, and
// SplitBatch. MergeCall and AllReduce are in replica_context_test.cc, the variables' rules in the
// variable tests.
#include "weft/distribute/strategy.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "weft/distribute/all_reduce_cross_device_ops.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using testing::CpuDevice;
using testing::CpuDevices;
using Outputs = StatusOr<std::vector<Output>>;

std::unique_ptr<MirroredStrategy> TwoReplicas() {
  auto strategy = MirroredStrategy::Create({"/cpu:0", "/cpu:1"});
  EXPECT_TRUE(strategy.ok()) << strategy.status();
  return strategy.ok() ? std::move(strategy).value() : nullptr;
}

TEST(StrategyTest, DevicesAreCanonicalAndBadListsAreRefused) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  EXPECT_EQ(strategy->devices(), CpuDevices(2));
  EXPECT_EQ(strategy->num_replicas_in_sync(), 2);
  Status s = MirroredStrategy::Create({}).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  s = MirroredStrategy::Create({"/cpu:0", "/cpu:1", "/device:CPU:0"}).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'/cpu:0'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'/device:CPU:0'"), std::string::npos) << s;
  auto one = OneDeviceStrategy::Create("/cpu:1");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)->devices(), std::vector<std::string>{CpuDevice(1)});
}

TEST(StrategyTest, MirroredAllReducesAndOrdersTheCollectivesThatCrossTasks) {
  auto local = MirroredStrategy::Create({"/cpu:0", "/cpu:1"});
  ASSERT_TRUE(local.ok()) << local.status();
  auto* local_ops = dynamic_cast<AllReduceCrossDeviceOps*>(&(*local)->cross_device_ops());
  ASSERT_NE(local_ops, nullptr);
  EXPECT_FALSE(local_ops->options().order_collectives);
  // Replicas on two tasks all-reduce across the servers' transports, one collective at a time.
  auto cluster = MirroredStrategy::Create(
      {"/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto* cluster_ops = dynamic_cast<AllReduceCrossDeviceOps*>(&(*cluster)->cross_device_ops());
  ASSERT_NE(cluster_ops, nullptr);
  EXPECT_TRUE(cluster_ops->options().order_collectives);
}

TEST(StrategyTest, RunBuildsEachReplicaInItsScopeAndDeviceOneAtATime) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  Scope root = Scope::NewRootScope();
  std::atomic<int> running{0}, most{0};
  std::vector<int> seen;
  auto result = strategy->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    int now = running.fetch_add(1) + 1;
    most.store(std::max(most.load(), now));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    seen.push_back(ctx.replica_id());
    EXPECT_EQ(ctx.num_replicas_in_sync(), 2);
    EXPECT_EQ(ctx.device(), CpuDevice(ctx.replica_id()));
    auto x = ops::Const(scope.WithOpName("x"), static_cast<float>(ctx.replica_id() + 1));
    running.fetch_sub(1);
    return std::vector<Output>{x, ops::Neg(scope, x)};
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(most.load(), 1);
  EXPECT_EQ(seen, (std::vector<int>{0, 1}));
  ASSERT_EQ(result->size(), 2u);
  const PerReplica& x = (*result)[0];
  EXPECT_EQ(x.value(0).node()->name(), "x");
  EXPECT_EQ(x.value(1).node()->name(), "replica_1/x");
  EXPECT_EQ(x.value(1).node()->requested_device(), CpuDevice(1));
  EXPECT_EQ(x.device(1), CpuDevice(1));
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  auto values = testing::Fetch(*session, (*result)[1].values());
  EXPECT_TENSOR_EQ(values[0], Tensor::Scalar(-1.0f));
  EXPECT_TENSOR_EQ(values[1], Tensor::Scalar(-2.0f));
}

TEST(StrategyTest, RunReportsAReplicaErrorAndMismatchedOutputCounts) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  Scope root = Scope::NewRootScope();
  Status s = strategy
                 ->Run(root,
                       [](ReplicaContext& ctx, const Scope&) -> Outputs {
                         if (ctx.replica_id() == 1) return NotFound("no data for replica 1");
                         return std::vector<Output>{};
                       })
                 .status();
  EXPECT_EQ(s.code(), Code::kNotFound) << s;
  EXPECT_NE(s.message().find("no data for replica 1"), std::string::npos) << s;
  s = strategy
          ->Run(root,
                [](ReplicaContext& ctx, const Scope& scope) -> Outputs {
                  std::vector<Output> out = {ops::Const(scope, 1.0f)};
                  if (ctx.replica_id() == 1) out.push_back(ops::Const(scope, 2.0f));
                  return out;
                })
          .status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("replica 1 returned 2 outputs but replica 0 returned 1"),
            std::string::npos)
      << s;
}

TEST(StrategyTest, SplitBatchSlicesWithoutCopying) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  Tensor batch =
      Tensor::FromVector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, TensorShape({6, 2}));
  auto slices = strategy->SplitBatch(batch);
  ASSERT_TRUE(slices.ok()) << slices.status();
  ASSERT_EQ(slices->size(), 2u);
  EXPECT_TRUE((*slices)[1].SharesBufferWith(batch));
  EXPECT_TENSOR_EQ((*slices)[1],
                   Tensor::FromVector<float>({6, 7, 8, 9, 10, 11}, TensorShape({3, 2})));
  Status s = strategy->SplitBatch(Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7})).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("7"), std::string::npos) << s;
  EXPECT_NE(s.message().find("2 replicas"), std::string::npos) << s;
  EXPECT_TRUE(IsInvalidArgument(strategy->SplitBatch(Tensor::Scalar(1.0f)).status()));
  auto empty = strategy->SplitBatch(Tensor::FromVector<float>({}));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)[0].dim_size(0), 0);
}

// ---- Scope(): variables created inside become distributed ----

// Reads of every component of every variable the strategy created through Scope(), after running
// their initializers; result[v][i] is variable v's component i.
std::vector<std::vector<Tensor>> InitializedComponents(const Strategy& strategy,
                                                       const Scope& root) {
  std::vector<Output> inits, reads;
  for (const auto& variable : strategy.variables()) {
    inits.push_back(variable->initializer());
    for (const Variable& component : variable->components()) reads.push_back(component.Read(root));
  }
  auto session = testing::MakeSession(root, strategy.num_replicas_in_sync());
  if (session == nullptr) return {};
  testing::RunTargets(*session, inits);
  std::vector<Tensor> values = testing::Fetch(*session, reads);
  std::vector<std::vector<Tensor>> result(strategy.variables().size());
  for (size_t i = 0; i < values.size(); ++i) {
    result[i / strategy.num_replicas_in_sync()].push_back(values[i]);
  }
  return result;
}

TEST(StrategyScopeTest, CrossReplicaCreationsAreDistributedAndReturnComponentZero) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  Scope root = Scope::NewRootScope();
  Variable v;
  {
    StrategyScope in_scope = strategy->Scope();
    EXPECT_EQ(&in_scope.strategy(), strategy.get());
    v = Variable::Create(root.NewSubScope("dense"), "v", TensorShape({2, 3}), DataType::kFloat,
                         Initializer::RandomUniform(-1, 1));
  }
  Variable plain =
      Variable::Create(root, "plain", TensorShape({}), DataType::kFloat, Initializer::Zeros());
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(strategy->variables().size(), 1u);
  std::shared_ptr<DistributedVariable> created = strategy->variables()[0];
  EXPECT_EQ(v.name(), "dense/v");
  EXPECT_EQ(created->name(), "dense/v");
  EXPECT_NE(created->synchronization(), VariableSynchronization::kOnRead);  // mirrored
  ASSERT_EQ(created->num_components(), 2);
  EXPECT_EQ(created->component(0).handle().node(), v.handle().node());
  EXPECT_EQ(created->component(1).name(), "dense/v/replica_1");
  EXPECT_EQ(created->component(1).handle().node()->requested_device(), CpuDevice(1));
  EXPECT_EQ(plain.name(), "plain");
  auto values = InitializedComponents(*strategy, root);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_TENSOR_EQ(values[0][1], values[0][0]);
}

// CreateVariable called inside the strategy's own scope makes exactly the variable asked for (its
// components are not themselves handed to the scope's creator as new variables).
TEST(StrategyScopeTest, CreateVariableInsideTheScopeMakesOneVariableOfItsKind) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  Scope root = Scope::NewRootScope();
  StrategyScope in_scope = strategy->Scope();
  auto total = strategy->CreateVariable(root, "total", TensorShape({}), DataType::kFloat,
                                        Initializer::Zeros(), VariableSynchronization::kOnRead,
                                        VariableAggregation::kSum);
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ((*total)->synchronization(), VariableSynchronization::kOnRead);
  EXPECT_EQ((*total)->component(0).name(), "total");
  // Made directly, not through the scope: nothing is recorded in variables().
  EXPECT_TRUE(strategy->variables().empty());
}

TEST(StrategyScopeTest, ReplicasShareReplicaZerosVariablesAndSeeTheirContext) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  Scope root = Scope::NewRootScope();
  EXPECT_EQ(CurrentReplicaContext(), nullptr);
  StrategyScope in_scope = strategy->Scope();
  std::vector<std::vector<Variable>> made(2);
  std::vector<bool> context_seen(2, false);
  bool merge_context_null = false;
  auto result = strategy->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    const int r = ctx.replica_id();
    context_seen[r] = CurrentReplicaContext() == &ctx;
    Scope dense = scope.NewSubScope("dense");
    made[r].push_back(Variable::Create(dense, "w", TensorShape({4, 3}), DataType::kFloat,
                                       Initializer::GlorotUniform()));
    made[r].push_back(
        Variable::Create(dense, "b", TensorShape({3}), DataType::kFloat, Initializer::Ones()));
    auto merged = ctx.MergeCall(
        {made[r][1].Read(scope)},
        [&](const Scope&,
            const std::vector<PerReplica>& grouped) -> StatusOr<std::vector<DistributedValues>> {
          merge_context_null = CurrentReplicaContext() == nullptr;
          return std::vector<DistributedValues>{grouped[0]};
        });
    WEFT_RETURN_IF_ERROR(merged.status());
    // A creation after the merge is matched too.
    made[r].push_back(
        Variable::Create(scope, "late", TensorShape({}), DataType::kFloat, Initializer::Zeros()));
    WEFT_RETURN_IF_ERROR(scope.status());
    return std::vector<Output>{made[r][0].Read(scope)};
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(CurrentReplicaContext(), nullptr);
  EXPECT_TRUE(context_seen[0]);
  EXPECT_TRUE(context_seen[1]);
  EXPECT_TRUE(merge_context_null);
  auto variables = strategy->variables();
  ASSERT_EQ(variables.size(), 3u);
  for (size_t k = 0; k < variables.size(); ++k) {
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(made[r][k]);
      EXPECT_EQ(made[r][k].handle().node(), variables[k]->component(r).handle().node())
          << "variable " << k << " replica " << r;
      EXPECT_EQ(made[r][k].handle().node()->requested_device(), CpuDevice(r));
    }
  }
  EXPECT_EQ(variables[0]->name(), "dense/w");
  EXPECT_EQ(variables[2]->name(), "late");
  auto values = InitializedComponents(*strategy, root);
  ASSERT_EQ(values.size(), 3u);
  for (const auto& components : values) EXPECT_TENSOR_EQ(components[1], components[0]);
  EXPECT_TENSOR_EQ(values[1][0], Tensor::FromVector<float>({1, 1, 1}));
}

// Runs fn under Scope() on two replicas and returns Run's status.
Status RunInScope(const std::function<void(int r, const Scope& scope)>& create) {
  auto strategy = TwoReplicas();
  if (strategy == nullptr) return Internal("no strategy");
  Scope root = Scope::NewRootScope();
  StrategyScope in_scope = strategy->Scope();
  return strategy
      ->Run(root,
            [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
              create(ctx.replica_id(), scope);
              WEFT_RETURN_IF_ERROR(scope.status());
              return std::vector<Output>{};
            })
      .status();
}

TEST(StrategyScopeTest, MismatchedCreationsAcrossReplicasNameTheVariable) {
  auto make = [](const Scope& scope, const char* name, TensorShape shape) {
    Variable::Create(scope, name, shape, DataType::kFloat, Initializer::Zeros());
  };
  // Another name.
  Status s = RunInScope(
      [&](int r, const Scope& scope) { make(scope, r == 0 ? "w" : "u", TensorShape({2})); });
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'u'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'w'"), std::string::npos) << s;
  // Another shape.
  s = RunInScope([&](int r, const Scope& scope) {
    make(scope, "w", r == 0 ? TensorShape({2}) : TensorShape({3}));
  });
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'w'"), std::string::npos) << s;
  // More creations than replica 0.
  s = RunInScope([&](int r, const Scope& scope) {
    make(scope, "w", TensorShape({2}));
    if (r == 1) make(scope, "extra", TensorShape({2}));
  });
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'extra'"), std::string::npos) << s;
  // Fewer creations than replica 0.
  s = RunInScope([&](int r, const Scope& scope) {
    make(scope, "w", TensorShape({2}));
    if (r == 0) make(scope, "missing", TensorShape({2}));
  });
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'missing'"), std::string::npos) << s;
  // Matching creations are fine.
  s = RunInScope([&](int, const Scope& scope) { make(scope, "w", TensorShape({2})); });
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace weft::distribute
