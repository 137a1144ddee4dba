// Strategy: device lists, Run's naming, placement, turn-taking and error reporting, and
// SplitBatch. MergeCall and AllReduce are in replica_context_test.cc, the variables' rules in the
// variable tests.
#include "weft/distribute/strategy.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "weft/distribute/session_test_util.h"
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
  EXPECT_EQ(x.value(0).node()->name(), "replica_0/x");
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

}  // namespace
}  // namespace weft::distribute
