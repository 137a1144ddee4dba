// Clipping gradients by their global norm, in the graph (the reference's tf.clip_by_global_norm):
// every gradient is scaled by clip_norm / max(global_norm, clip_norm), so that together they have
// a norm of at most clip_norm and keep their direction. Optimizer::SetGlobalClipNorm uses these on
// the gradients it applies (see optimizer.h for where, under each strategy). Stateless graph
// builders; not thread-safe only as far as the Scope is not.
#pragma once

#include <vector>

#include "weft/graph/builder/ops.h"

namespace weft::train {

// sqrt(sum over every element of every value of its square), a float64 scalar: each value's
// squares are summed in its own dtype, the sums added in float64. For a sparse gradient pass its
// rows: a repeated row then counts once per repeat, as the reference counts IndexedSlices' values.
// Zero for no values.
Output GlobalNorm(const Scope& scope, const std::vector<Output>& values);

// The factor clip_norm / max(global_norm, clip_norm) (float64), NaN when `global_norm` is not
// finite: as in the reference, a step whose gradients hold an Inf or a NaN then gives NaN
// gradients (and weights) rather than silently dropping the step.
Output ClipScale(const Scope& scope, const Output& global_norm, double clip_norm);

// Each value times `scale` (cast to the value's dtype).
std::vector<Output> ScaleValues(const Scope& scope, const std::vector<Output>& values,
                                const Output& scale);

// The three together: `values` scaled to a global norm of at most clip_norm (> 0).
std::vector<Output> ClipByGlobalNorm(const Scope& scope, const std::vector<Output>& values,
                                     double clip_norm);

}  // namespace weft::train
