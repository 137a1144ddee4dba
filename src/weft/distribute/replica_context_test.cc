// ReplicaContext inside Strategy::Run on 2 replicas: MergeCall groups every replica's values and
// runs the merge once, mismatched MergeCall counts are an error (not a hang), AllReduce gives every
// replica the reduction (with either CrossDeviceOps); outside Run only one replica is served.
#include "weft/distribute/replica_context.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "weft/distribute/strategy.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using testing::CpuDevice;
using testing::CpuDevices;
using Outputs = StatusOr<std::vector<Output>>;

Tensor Vec(float a, float b) { return Tensor::FromVector<float>({a, b}); }

std::unique_ptr<MirroredStrategy> TwoReplicas() {
  auto strategy = MirroredStrategy::Create({"/cpu:0", "/cpu:1"});
  EXPECT_TRUE(strategy.ok()) << strategy.status();
  return strategy.ok() ? std::move(strategy).value() : nullptr;
}

TEST(ReplicaContextTest, MergeCallGroupsEveryReplicaAndRunsTheMergeOnce) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  Scope root = Scope::NewRootScope();
  int merges = 0;
  auto result = strategy->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
    auto a = ops::Const(scope, static_cast<float>(ctx.replica_id() + 1));
    auto b = ops::Const(scope, static_cast<float>(10 * (ctx.replica_id() + 1)));
    auto merged = ctx.MergeCall(
        {a, b},
        [&](const Scope& cross,
            const std::vector<PerReplica>& grouped) -> StatusOr<std::vector<DistributedValues>> {
          ++merges;
          EXPECT_EQ(grouped.size(), 2u);
          EXPECT_EQ(grouped[1].num_replicas(), 2);
          EXPECT_EQ(grouped[1].device(1), CpuDevice(1));
          // The sum of a and the sum of b, each copied to both devices.
          auto sum_a = ops::AddN(cross, grouped[0].values());
          auto sum_b = ops::AddN(cross, grouped[1].values());
          return std::vector<DistributedValues>{
              Mirrored({ops::Identity(cross.WithDevice(CpuDevice(0)), sum_a),
                        ops::Identity(cross.WithDevice(CpuDevice(1)), sum_a)},
                       CpuDevices(2)),
              PerReplica({sum_b, ops::Neg(cross, sum_b)}, CpuDevices(2))};
        });
    if (!merged.ok()) return merged.status();
    EXPECT_EQ(merged->size(), 2u);
    return merged;
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(merges, 1);
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  auto values = testing::Fetch(*session, {(*result)[0].value(0), (*result)[0].value(1),
                                          (*result)[1].value(0), (*result)[1].value(1)});
  EXPECT_TENSOR_EQ(values[0], Tensor::Scalar(3.0f));
  EXPECT_TENSOR_EQ(values[1], Tensor::Scalar(3.0f));
  EXPECT_TENSOR_EQ(values[2], Tensor::Scalar(30.0f));
  EXPECT_TENSOR_EQ(values[3], Tensor::Scalar(-30.0f));
}

ReplicaContext::MergeFn NoMerge() {
  return
      [](const Scope&, const std::vector<PerReplica>&) -> StatusOr<std::vector<DistributedValues>> {
        return std::vector<DistributedValues>{};
      };
}

TEST(ReplicaContextTest, DifferentNumbersOfMergeCallsAreAnErrorNotAHang) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  strategy->set_run_timeout(std::chrono::seconds(30));
  for (int extra : {0, 2}) {
    Scope root = Scope::NewRootScope();
    auto started = std::chrono::steady_clock::now();
    Status s = strategy
                   ->Run(root,
                         [&](ReplicaContext& ctx, const Scope&) -> Outputs {
                           // Replica 0 merges once; replica 1 `extra` times.
                           int calls = ctx.replica_id() == 0 ? 1 : extra;
                           for (int i = 0; i < calls; ++i) {
                             auto merged = ctx.MergeCall({}, NoMerge());
                             if (!merged.ok()) return merged.status();
                           }
                           return std::vector<Output>{};
                         })
                   .status();
    EXPECT_TRUE(IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("different numbers of ReplicaContext::MergeCall calls"),
              std::string::npos)
        << s;
    if (extra == 0) {
      EXPECT_NE(s.message().find("replica 0: 1 (waiting), replica 1: 0 (finished)"),
                std::string::npos)
          << s;
    } else {
      EXPECT_NE(s.message().find("replica 0: 1 (finished), replica 1: 2 (waiting)"),
                std::string::npos)
          << s;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  }
}

TEST(ReplicaContextTest, AllReduceGivesEveryReplicaTheSum) {
  for (bool all_reduce : {true, false}) {
    auto strategy = MirroredStrategy::Create(
        CpuDevices(2), all_reduce ? nullptr : std::make_unique<ReductionToOneDevice>());
    ASSERT_TRUE(strategy.ok());
    Scope root = Scope::NewRootScope();
    auto result = (*strategy)->Run(root, [&](ReplicaContext& ctx, const Scope& scope) -> Outputs {
      auto x = ops::Const(scope, Vec(ctx.replica_id() + 1.0f, 1));
      auto sum = ctx.AllReduce(ReduceOp::kSum, x);
      auto mean = ctx.AllReduce(ReduceOp::kMean, x);
      if (!sum.ok()) return sum.status();
      if (!mean.ok()) return mean.status();
      return std::vector<Output>{*sum, *mean};
    });
    ASSERT_TRUE(result.ok()) << result.status();
    auto reduced = (*strategy)->Reduce(root, ReduceOp::kSum, (*result)[0]);
    ASSERT_TRUE(reduced.ok()) << reduced.status();
    auto session = testing::MakeSession(root, 2);
    ASSERT_NE(session, nullptr);
    // Every member of a collective must run in the step: fetch both replicas' results.
    auto values =
        testing::Fetch(*session, {(*result)[0].value(0), (*result)[0].value(1),
                                  (*result)[1].value(0), (*result)[1].value(1), *reduced});
    EXPECT_TENSOR_EQ(values[0], Vec(3, 2));
    EXPECT_TENSOR_EQ(values[1], Vec(3, 2));
    EXPECT_TENSOR_EQ(values[2], Vec(1.5f, 1));
    EXPECT_TENSOR_EQ(values[3], Vec(1.5f, 1));
    EXPECT_TENSOR_EQ(values[4], Vec(6, 4));
  }
}

TEST(ReplicaContextTest, OutsideRunMergeCallServesOneReplicaOnly) {
  auto one = OneDeviceStrategy::Create("/cpu:0").value();
  Scope root = Scope::NewRootScope();
  ReplicaContext ctx(*one, 0, root, nullptr);
  auto x = ops::Const(root, 2.0f);
  auto reduced = ctx.AllReduce(ReduceOp::kMean, x);
  ASSERT_TRUE(reduced.ok()) << reduced.status();
  auto two = TwoReplicas();
  ASSERT_NE(two, nullptr);
  ReplicaContext lonely(*two, 1, root, nullptr);
  Status s = lonely.MergeCall({x}, NoMerge()).status();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
}

TEST(ReplicaContextTest, AReplicaThatNeverPausesTimesOutInsteadOfHanging) {
  auto strategy = TwoReplicas();
  ASSERT_NE(strategy, nullptr);
  strategy->set_run_timeout(std::chrono::milliseconds(100));
  Scope root = Scope::NewRootScope();
  // Replica 0 takes longer than the timeout to build; it captures nothing from this frame, since
  // its thread is left to finish on its own.
  auto started = std::chrono::steady_clock::now();
  Status s = strategy
                 ->Run(root,
                       [](ReplicaContext& ctx, const Scope&) -> Outputs {
                         if (ctx.replica_id() == 0) {
                           std::this_thread::sleep_for(std::chrono::milliseconds(300));
                         }
                         return std::vector<Output>{};
                       })
                 .status();
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("replica 0"), std::string::npos) << s;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(290));
  // Let the abandoned threads finish before the test ends.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace weft::distribute
