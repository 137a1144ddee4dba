#include "weft/framework/shape_inference.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(PartialShapeTest, MergeFillsUnknownDimsAndRejectsConflicts) {
  auto merged = PartialShape({-1, 784}).Merge(PartialShape({128, -1}));
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged, PartialShape({128, 784}));
  EXPECT_TRUE(PartialShape().Merge(PartialShape({3})).ok());
  EXPECT_FALSE(PartialShape({3}).Merge(PartialShape({4})).ok());
  EXPECT_FALSE(PartialShape({3}).Merge(PartialShape({3, 1})).ok());
  EXPECT_EQ(PartialShape({-1, 2}).DebugString(), "[?,2]");
  EXPECT_EQ(PartialShape().DebugString(), "<unknown>");
}

TEST(PartialShapeTest, CompatibilityWithConcreteShapes) {
  EXPECT_TRUE(PartialShape({-1, 2}).IsCompatibleWith(TensorShape({5, 2})));
  EXPECT_FALSE(PartialShape({-1, 2}).IsCompatibleWith(TensorShape({5, 3})));
  EXPECT_FALSE(PartialShape({-1, 2}).IsCompatibleWith(TensorShape({2})));
  EXPECT_TRUE(PartialShape().IsCompatibleWith(TensorShape({1, 2, 3})));
}

TEST(BroadcastShapesTest, FollowsNumpyRules) {
  EXPECT_EQ(*BroadcastShapes(PartialShape({2, 3}), PartialShape({3})), PartialShape({2, 3}));
  EXPECT_EQ(*BroadcastShapes(PartialShape({4, 1, 3}), PartialShape({5, 1})),
            PartialShape({4, 5, 3}));
  EXPECT_EQ(*BroadcastShapes(PartialShape({}), PartialShape({7})), PartialShape({7}));
  EXPECT_EQ(*BroadcastShapes(PartialShape({-1, 3}), PartialShape({2, 1})), PartialShape({2, 3}));
  Status s = BroadcastShapes(PartialShape({2, 3}), PartialShape({4})).status();
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("[2,3]"), std::string::npos) << s;
}

TEST(InferenceContextTest, ErrorsNameTheNode) {
  OpDef op = OpDefBuilder("Add")
                 .Input("x: T")
                 .Input("y: T")
                 .Output("z: T")
                 .Attr("T: type")
                 .SetShapeFn(shape_fn::BroadcastBinaryOp)
                 .Build()
                 .value();
  proto::NodeDef node;
  node.set_name("plus");
  node.set_op("Add");
  InferenceContext context(node, op, {PartialShape({2}), PartialShape({3})}, {}, 1);
  Status s = op.shape_fn(context);
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("node 'plus' (Add)"), std::string::npos) << s;
  EXPECT_TRUE(IsInvalidArgument(context.WithRank(0, 2)));
}

}  // namespace
}  // namespace weft
