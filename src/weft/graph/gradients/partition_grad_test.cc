// Numeric checks of the DynamicPartition and DynamicStitch gradients in float64 (the pieces of a
// lookup across the shards of a table), for known, rank-only and unknown shapes, with a partition
// that receives no rows and with rows of more than one element.
#include <gtest/gtest.h>

#include "weft/graph/gradients/gradients.h"
#include "weft/testing/gradient_checker.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

using testing::Float64Placeholder;
using testing::GradientNear;
using testing::kAllShapeKnowledges;
using testing::kGradientTolerance;
using testing::RandomTensor;
using testing::RunGraph;
using testing::ShapeKnowledge;

TEST(PartitionGradTest, DynamicPartitionSendsEachRowsGradientBackToItsRow) {
  const Tensor partitions = Tensor::FromVector<int32_t>({2, 0, 2, 2, 0});  // partition 1 is empty
  for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
    if (knowledge == ShapeKnowledge::kNone) continue;  // the Sums below need their input's rank
    Scope root = Scope::NewRootScope();
    Output data = Float64Placeholder(root.WithOpName("data"), TensorShape({5, 2}), knowledge);
    std::vector<Output> parts = ops::DynamicPartition(root, data, ops::Const(root, partitions), 3);
    ASSERT_EQ(parts.size(), 3u);
    // Weigh the parts differently so that a row sent to the wrong place shows.
    Output y = ops::Add(root, ops::Sum(root, ops::Mul(root, parts[0], 3.0), {0, 1}),
                        ops::Sum(root, ops::Square(root, parts[2]), {0, 1}));
    EXPECT_TRUE(GradientNear(root, {data}, {RandomTensor({5, 2}, -1, 1, 3)}, y, kGradientTolerance))
        << "knowledge " << static_cast<int>(knowledge);
  }
}

TEST(PartitionGradTest, DynamicStitchSendsEachPositionsGradientToItsData) {
  for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
    Scope root = Scope::NewRootScope();
    Output a = Float64Placeholder(root.WithOpName("a"), TensorShape({2, 3}), knowledge);
    Output b = Float64Placeholder(root.WithOpName("b"), TensorShape({3, 3}), knowledge);
    Output merged = ops::DynamicStitch(root,
                                       {ops::Const(root, Tensor::FromVector<int32_t>({4, 0})),
                                        ops::Const(root, Tensor::FromVector<int32_t>({1, 3, 2}))},
                                       {a, b});
    Output y = ops::Square(root, merged);
    EXPECT_TRUE(GradientNear(root, {a, b},
                             {RandomTensor({2, 3}, -1, 1, 4), RandomTensor({3, 3}, -1, 1, 5)}, y,
                             kGradientTolerance))
        << "knowledge " << static_cast<int>(knowledge);
  }
}

TEST(PartitionGradTest, PartitionThenStitchIsTheIdentityAndSoIsItsGradient) {
  Scope root = Scope::NewRootScope();
  Output data = ops::Placeholder(root, DataType::kDouble, PartialShape({4}));
  Output partitions = ops::Const(root, Tensor::FromVector<int32_t>({1, 0, 1, 1}));
  Output positions = ops::Range(root, 0, 4, 1);
  std::vector<Output> parts = ops::DynamicPartition(root, data, partitions, 2);
  std::vector<Output> where = ops::DynamicPartition(root, positions, partitions, 2);
  Output merged = ops::DynamicStitch(root, where, parts);
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {merged}, {data},
                                   {ops::Const(root, {1.0, 10.0, 100.0, 1000.0})}, &grads)
                  .ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{data.name(), Tensor::FromVector<double>({5, 6, 7, 8})}}, {merged, grads[0]});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({5, 6, 7, 8}));
  EXPECT_TENSOR_NEAR((*values)[1], Tensor::FromVector<double>({1, 10, 100, 1000}));
}

}  // namespace
}  // namespace weft
