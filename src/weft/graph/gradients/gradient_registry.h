// GradientRegistry: op name -> the function that builds an op's backward graph. A gradient
// function receives the forward node and the gradient of each of its outputs (an empty Output for
// an output nothing depends on) and returns one gradient per data input (empty for inputs without a
// gradient, such as axes or integer indices). Ops that must block gradients (Shape, ArgMax,
// StopGradient) are registered as having none. Filled explicitly by Register...Gradients
// functions (gradients.h lists them); read-only afterwards, safe from any thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph/builder/scope.h"

namespace weft {

using GradFunc =
    std::function<Status(const Scope& scope, Node* op, const std::vector<Output>& grad_outputs,
                         std::vector<Output>* grad_inputs)>;

class GradientRegistry {
 public:
  void Register(std::string op, GradFunc fn);
  // Marks `op` as blocking gradients: nothing flows back through it.
  void RegisterNoGradient(std::string op);

  // The gradient function of `op`; a null function (with OK) for ops registered without one;
  // NotFound when the op is unknown to the registry.
  StatusOr<const GradFunc*> Lookup(std::string_view op) const;

 private:
  std::map<std::string, GradFunc, std::less<>> functions_;  // null function = no gradient
};

}  // namespace weft
