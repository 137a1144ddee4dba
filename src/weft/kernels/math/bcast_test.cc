// Tests for MakeBroadcastPlan (output shape and dimension collapsing) and BroadcastGradientAxes.
#include "weft/kernels/math/bcast.h"

#include <gtest/gtest.h>

namespace weft::kernels {
namespace {

using Dims = std::vector<int64_t>;

BroadcastPlan Plan(const TensorShape& x, const TensorShape& y) {
  StatusOr<BroadcastPlan> plan = MakeBroadcastPlan(x, y);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : BroadcastPlan();
}

TEST(BroadcastPlanTest, SameElementsNeedNoBroadcast) {
  for (const auto& [x, y] : {std::pair{TensorShape({2, 3}), TensorShape({2, 3})},
                             std::pair{TensorShape({1, 3}), TensorShape({3})},
                             std::pair{TensorShape({}), TensorShape({1, 1})},
                             std::pair{TensorShape({}), TensorShape({})}}) {
    BroadcastPlan plan = Plan(x, y);
    EXPECT_FALSE(plan.needs_broadcast) << x << " " << y;
    EXPECT_TRUE(plan.output_dims.empty());
  }
  EXPECT_EQ(Plan(TensorShape({1, 3}), TensorShape({3})).output_shape, TensorShape({1, 3}));
}

TEST(BroadcastPlanTest, CollapsesDimensionsThatBroadcastAlike) {
  BroadcastPlan rows = Plan(TensorShape({2, 3, 4}), TensorShape({4}));
  EXPECT_TRUE(rows.needs_broadcast);
  EXPECT_EQ(rows.output_shape, TensorShape({2, 3, 4}));
  EXPECT_EQ(rows.x_dims, (Dims{6, 4}));
  EXPECT_EQ(rows.y_dims, (Dims{1, 4}));
  EXPECT_EQ(rows.output_dims, (Dims{6, 4}));

  BroadcastPlan mixed = Plan(TensorShape({4, 1, 3}), TensorShape({5, 1}));
  EXPECT_EQ(mixed.output_shape, TensorShape({4, 5, 3}));
  EXPECT_EQ(mixed.x_dims, (Dims{4, 1, 3}));
  EXPECT_EQ(mixed.y_dims, (Dims{1, 5, 1}));

  // Size-1 output dims are dropped; [2,1,3] with [2,1,1] is [6]-ish: kept 2, broadcast 3.
  BroadcastPlan ones = Plan(TensorShape({2, 1, 3}), TensorShape({2, 1, 1}));
  EXPECT_EQ(ones.x_dims, (Dims{2, 3}));
  EXPECT_EQ(ones.y_dims, (Dims{2, 1}));

  BroadcastPlan scalar = Plan(TensorShape({}), TensorShape({2, 3}));
  EXPECT_EQ(scalar.x_dims, (Dims{1}));
  EXPECT_EQ(scalar.y_dims, (Dims{6}));

  BroadcastPlan empty = Plan(TensorShape({0, 3}), TensorShape({3}));
  EXPECT_EQ(empty.output_shape, TensorShape({0, 3}));
}

TEST(BroadcastPlanTest, RejectsIncompatibleShapes) {
  StatusOr<BroadcastPlan> plan = MakeBroadcastPlan(TensorShape({2, 3}), TensorShape({4}));
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(IsInvalidArgument(plan.status()));
  EXPECT_EQ(plan.status().message(), "incompatible shapes: [2,3] vs. [4]");
  EXPECT_FALSE(MakeBroadcastPlan(TensorShape({0}), TensorShape({2})).ok());
}

TEST(BroadcastGradientAxesTest, MatchesTheReferenceSystem) {
  using Axes = std::pair<Dims, Dims>;
  auto axes = [](const Dims& s0, const Dims& s1) {
    StatusOr<Axes> r = BroadcastGradientAxes(s0, s1);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : Axes();
  };
  EXPECT_EQ(axes({2, 3}, {3}), (Axes{{}, {0}}));
  EXPECT_EQ(axes({4, 1, 3}, {5, 1}), (Axes{{1}, {0, 2}}));
  EXPECT_EQ(axes({2, 1}, {1}), (Axes{{1}, {0, 1}}));
  EXPECT_EQ(axes({1, 1}, {1, 1}), (Axes{{}, {}}));
  EXPECT_FALSE(BroadcastGradientAxes({3}, {4}).ok());
}

}  // namespace
}  // namespace weft::kernels
