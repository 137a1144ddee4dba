// MoveTogether: values bound for another device travel as one tensor per (source device,
// destination device, dtype) instead of one transfer each. Each group of two or more is flattened
// and joined where its values are computed and cut back into the values' shapes where they go, so a
// parameter-server step sends one tensor of dense gradients to each ps task, not one per variable
// (each crossing is an RPC of its own every step). Not thread-safe (graph building is not).
#pragma once

#include <string>
#include <vector>

#include "weft/core/status.h"
#include "weft/core/tensor_shape.h"
#include "weft/graph/builder/scope.h"

namespace weft::distribute {

// For each values[i] (of shape shapes[i], fully defined) an output on destinations[i] with its
// value: the same output when it is already there, its source device is unknown (no requested
// device) or it is the only one of its group. The values must not depend on what their
// destinations compute from the others (the join waits for every value of its group).
StatusOr<std::vector<Output>> MoveTogether(const Scope& scope, const std::vector<Output>& values,
                                           const std::vector<std::string>& destinations,
                                           const std::vector<TensorShape>& shapes);

}  // namespace weft::distribute
