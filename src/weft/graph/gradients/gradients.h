// Symbolic differentiation: AddSymbolicGradients adds to the graph the nodes that compute
// d(sum of ys * grad_ys)/d(xs). Gradients of a tensor used several times are summed (AddN); nodes
// that do not lie on a path from an x to a y are not differentiated at all, so ops without a
// gradient are fine off those paths; on a path, an op without a registered gradient is an
// InvalidArgument naming the node and its op. An x that no y depends on gets zeros.
#pragma once

#include <vector>

#include "weft/graph/builder/scope.h"
#include "weft/graph/gradients/gradient_registry.h"

namespace weft {

// Registration functions of each family (gradients/*_grad.cc).
void RegisterArrayGradients(GradientRegistry& registry);
void RegisterMathGradients(GradientRegistry& registry);
void RegisterNnGradients(GradientRegistry& registry);

// Every gradient function of Weft, built once (thread-safe).
const GradientRegistry& AllGradients();

// `grad_ys` may be empty (ones for every y) or give one gradient per y.
Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& ys,
                            const std::vector<Output>& xs, const std::vector<Output>& grad_ys,
                            std::vector<Output>* grad_xs);
Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& ys,
                            const std::vector<Output>& xs, std::vector<Output>* grad_xs);

// As above with an explicit registry (tests).
Status AddSymbolicGradients(const Scope& scope, const GradientRegistry& registry,
                            const std::vector<Output>& ys, const std::vector<Output>& xs,
                            const std::vector<Output>& grad_ys, std::vector<Output>* grad_xs);

}  // namespace weft
