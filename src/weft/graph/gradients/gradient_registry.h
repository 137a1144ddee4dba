// GradientRegistry: op name -> the function that builds an op's backward graph. A gradient
// function receives the forward node and the gradient of each of its outputs (an empty Output for
// an output nothing depends on) and returns one gradient per data input (empty for inputs without a
// gradient, such as axes or integer indices). Ops that must block gradients (Shape, ArgMax,
// StopGradient) are registered as having none; ops that cannot be differentiated are registered as
// such with the reason, which differentiating through one reports. Filled explicitly by
// Register...Gradients functions (gradients.h lists them); read-only afterwards, safe from any
// thread.
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
  // Marks `op` as having no gradient by decision: a path through it is an error saying `reason`,
  // where RegisterNoGradient would silently pass nothing back.
  void RegisterNotDifferentiable(std::string op, std::string reason);

  // The gradient function of `op`; a null function (with OK) for ops registered without one;
  // InvalidArgument naming the op and the reason for ops registered as not differentiable;
  // NotFound when the op is unknown to the registry.
  StatusOr<const GradFunc*> Lookup(std::string_view op) const;
  // Every op registered by any of the three calls, sorted.
  std::vector<std::string> OpNames() const;

 private:
  struct Entry {
    GradFunc fn;                         // null: no gradient
    std::string not_differentiable_why;  // non-empty: not differentiable
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace weft
