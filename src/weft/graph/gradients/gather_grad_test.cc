// Numeric checks of the GatherV2 and UnsortedSegmentSum gradients in float64: every axis, repeated
// and scalar indices, int32 and int64 indices, constant and fed indices, known, rank-only and
// unknown shapes (the static and graph-computed paths); negative segment ids getting zeros; and a
// GatherV2 with a fed axis, whose gradient is unimplemented.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/graph/gradients/gradients.h"
#include "weft/testing/gradient_checker.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

using testing::Float64Placeholder;
using testing::GradientCheckOptions;
using testing::GradientNear;
using testing::kAllShapeKnowledges;
using testing::kGradientTolerance;
using testing::RandomTensor;
using testing::RunGraph;
using testing::ShapeKnowledge;

// An index input holding `values`: a Const, or a placeholder (of unknown shape) fed through
// `options`.
Output IndexInput(const Scope& scope, const Tensor& values, bool fed,
                  GradientCheckOptions* options) {
  if (!fed) return ops::Const(scope, values);
  Output placeholder = ops::Placeholder(scope, values.dtype());
  options->extra_feeds.emplace_back(placeholder.name(), values);
  return placeholder;
}

struct GatherCase {
  TensorShape params;
  Tensor indices;
  int axis;
};

TEST(GatherGradTest, GatherV2) {
  const GatherCase cases[] = {
      // Index 2 twice: its row gets both gradients.
      {{5, 3}, Tensor::FromVector<int32_t>({2, 0, 2, 4}, TensorShape({2, 2})), 0},
      {{5, 3}, Tensor::Scalar<int64_t>(3), 0},
      {{4}, Tensor::FromVector<int64_t>({1, 1, 3}), 0},
      {{2, 4, 3}, Tensor::FromVector<int32_t>({3, 0, 3}), 1},
      {{2, 4, 3}, Tensor::FromVector<int64_t>({2, 2, 0, 1}, TensorShape({2, 2})), -1},
      {{3, 2}, Tensor::FromVector<int32_t>({}), 0},
  };
  for (const GatherCase& c : cases) {
    for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
      if (c.axis != 0 && knowledge == ShapeKnowledge::kNone) continue;  // needs the rank
      for (bool fed : {false, true}) {
        Scope root = Scope::NewRootScope();
        GradientCheckOptions options;
        Output params = Float64Placeholder(root.WithOpName("params"), c.params, knowledge);
        Output indices = IndexInput(root, c.indices, fed, &options);
        Output y = ops::GatherV2(root, params, indices, c.axis);
        EXPECT_TRUE(GradientNear(root, {params}, {RandomTensor(c.params, -1, 1, 1)}, y,
                                 kGradientTolerance, options))
            << c.params << " indices " << c.indices.DebugString() << " axis " << c.axis
            << " knowledge " << static_cast<int>(knowledge) << " fed " << fed;
      }
    }
  }
}

TEST(GatherGradTest, GatherV2AddsTheGradientsOfRepeatedIndices) {
  Scope root = Scope::NewRootScope();
  Output params = ops::Placeholder(root, DataType::kDouble, PartialShape({3}));
  Output y = ops::GatherV2(root, params, {2, 0, 2}, 0);
  std::vector<Output> grads;
  ASSERT_TRUE(
      AddSymbolicGradients(root, {y}, {params}, {ops::Const(root, {1.0, 10.0, 100.0})}, &grads)
          .ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{params.name(), Tensor::FromVector<double>({5, 6, 7})}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({10, 0, 101}));
}

TEST(GatherGradTest, GatherV2WithAFedAxisIsUnimplemented) {
  Scope root = Scope::NewRootScope();
  Output params = ops::Placeholder(root, DataType::kDouble, PartialShape({3, 2}));
  Output axis = ops::Placeholder(root.WithOpName("axis"), DataType::kInt32, PartialShape({}));
  Output y = ops::GatherV2(root, params, {0, 1}, axis);
  std::vector<Output> grads;
  Status status = AddSymbolicGradients(root, {y}, {params}, &grads);
  EXPECT_TRUE(IsUnimplemented(status)) << status;
  EXPECT_NE(status.message().find("the gradient of GatherV2 needs a constant axis"),
            std::string::npos)
      << status;
}

struct SegmentCase {
  TensorShape data;
  Tensor ids;
  int num_segments;
};

TEST(GatherGradTest, UnsortedSegmentSum) {
  const SegmentCase cases[] = {
      {{4, 3}, Tensor::FromVector<int32_t>({0, 2, 0, 1}), 3},
      // A negative id drops its row: no gradient reaches it.
      {{4, 3}, Tensor::FromVector<int64_t>({1, -1, 1, 0}), 2},
      {{2, 2, 3}, Tensor::FromVector<int32_t>({3, -1, 0, 3}, TensorShape({2, 2})), 4},
      {{5}, Tensor::FromVector<int32_t>({0, 0, -2, 1, 0}), 2},
      {{0, 2}, Tensor::FromVector<int32_t>({}), 2},
  };
  for (const SegmentCase& c : cases) {
    for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
      for (bool fed : {false, true}) {
        Scope root = Scope::NewRootScope();
        GradientCheckOptions options;
        Output data = Float64Placeholder(root.WithOpName("data"), c.data, knowledge);
        Output ids = IndexInput(root, c.ids, fed, &options);
        Output y = ops::UnsortedSegmentSum(root, data, ids, c.num_segments);
        EXPECT_TRUE(GradientNear(root, {data}, {RandomTensor(c.data, -1, 1, 2)}, y,
                                 kGradientTolerance, options))
            << c.data << " ids " << c.ids.DebugString() << " knowledge "
            << static_cast<int>(knowledge) << " fed " << fed;
      }
    }
  }
}

TEST(GatherGradTest, DroppedRowsOfUnsortedSegmentSumGetZeros) {
  Scope root = Scope::NewRootScope();
  Output data = ops::Placeholder(root, DataType::kDouble, PartialShape({3, 2}));
  Output y = ops::UnsortedSegmentSum(root, data, {1, -1, 0}, 2);
  std::vector<Output> grads;
  Tensor dy = Tensor::FromVector<double>({1, 2, 3, 4}, TensorShape({2, 2}));
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {data}, {ops::Const(root, dy)}, &grads).ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{data.name(), RandomTensor({3, 2}, -1, 1, 3)}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0],
                     Tensor::FromVector<double>({3, 4, 0, 0, 1, 2}, TensorShape({3, 2})));
}

TEST(GatherGradTest, BothOpsHaveAGradient) {
  for (const char* op : {"GatherV2", "UnsortedSegmentSum"}) {
    StatusOr<const GradFunc*> fn = AllGradients().Lookup(op);
    ASSERT_TRUE(fn.ok()) << op << ": " << fn.status();
    EXPECT_TRUE(**fn) << op;
  }
}

}  // namespace
}  // namespace weft
