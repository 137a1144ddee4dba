// Numeric gradient checks for tests (after the reference system's gradient_checker): the symbolic
// gradient AddSymbolicGradients builds is compared, element by element, with a central-difference
// estimate computed by running the forward graph through a DirectSession in float64.
//
// To check every element of a non-scalar y, the checked function is L = sum(y * w) with w fixed
// random weights in [-1, 1) of y's shape (fed as y's grad_ys), so dL/dx = sum_j w_j dy_j/dx:
//
//   Scope root = Scope::NewRootScope();
//   Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({2, 3}));
//   Output y = ops::Exp(root, x);
//   EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor({2, 3}, -1, 1, 7)}, y, 1e-6));
//
// The checker adds nodes to the scope's graph (the gradient and a placeholder for w); use a new
// scope per check. Not thread-safe (like Scope).
#pragma once

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"
#include "weft/graph/gradients/gradient_registry.h"
#include "weft/runtime/session.h"

namespace weft::testing {

struct GradientCheckOptions {
  // The central-difference step.
  double delta = 1e-6;
  // Seeds the weights w on y.
  uint64_t seed = 17;
  // Values for placeholders other than the xs (for example axes fed at run time).
  NamedTensorList extra_feeds;
  // The gradient functions to check; null means AllGradients().
  const GradientRegistry* registry = nullptr;
};

// The largest |symbolic - numeric| over every element of d(sum(y * w))/dx for every x. The xs
// are float64 tensors that can be fed (placeholders), with values `x_values`; y is float64.
// InvalidArgument for bad arguments or a symbolic gradient whose shape differs from its x's;
// graph and run errors are passed on.
StatusOr<double> ComputeGradientError(const Scope& scope, const std::vector<Output>& xs,
                                      const std::vector<Tensor>& x_values, const Output& y,
                                      const GradientCheckOptions& options = {});

// Success when ComputeGradientError succeeds with an error below `tolerance`; otherwise a failure
// that says the error or the status.
::testing::AssertionResult GradientNear(const Scope& scope, const std::vector<Output>& xs,
                                        const std::vector<Tensor>& x_values, const Output& y,
                                        double tolerance, const GradientCheckOptions& options = {});

// float64 values uniform in [lo, hi), the same for the same arguments.
Tensor RandomTensor(const TensorShape& shape, double lo, double hi, uint64_t seed);

// How much of a placeholder's shape the graph knows: gradient functions take static paths
// (Const shapes) when shapes are known and build Shape-based subgraphs when they are not.
enum class ShapeKnowledge { kFull, kRankOnly, kNone };
// Every ShapeKnowledge, for tests that check a gradient under each.
inline constexpr ShapeKnowledge kAllShapeKnowledges[] = {
    ShapeKnowledge::kFull, ShapeKnowledge::kRankOnly, ShapeKnowledge::kNone};
// The tolerance of float64 central-difference checks of Weft's gradients.
inline constexpr double kGradientTolerance = 1e-6;

// A float64 placeholder for a value of `shape`, declared with as much of it as `knowledge` says.
Output Float64Placeholder(const Scope& scope, const TensorShape& shape,
                          ShapeKnowledge knowledge = ShapeKnowledge::kFull);

// Runs the scope's graph in a new DirectSession: feeds `feeds`, returns `fetches`.
StatusOr<std::vector<Tensor>> RunGraph(const Scope& scope, const NamedTensorList& feeds,
                                       const std::vector<Output>& fetches);

}  // namespace weft::testing
