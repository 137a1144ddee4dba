// Typed builders for the random ops (see ops/random_ops.cc). `shape` is a 1-D int32/int64 tensor
// or a literal ({2, 3}). With a nonzero seed the values are the same in every session and on any
// thread count; each run of the node draws new values. After an error in the scope each returns
// an empty Output and the scope keeps the error.
#pragma once

#include <cstdint>

#include "weft/graph/builder/node_builder.h"

namespace weft::ops {

struct RandomAttrs {
  int64_t seed = 0;  // seed and seed2 both 0: nondeterministic
  int64_t seed2 = 0;
};

// Uniform values in [0, 1).
Output RandomUniform(const Scope& scope, const Input& shape, DataType dtype,
                     const RandomAttrs& attrs = {});
// Normal values, mean 0, stddev 1.
Output RandomStandardNormal(const Scope& scope, const Input& shape, DataType dtype,
                            const RandomAttrs& attrs = {});
// Normal values, mean 0, stddev 1, redrawn beyond two stddev.
Output TruncatedNormal(const Scope& scope, const Input& shape, DataType dtype,
                       const RandomAttrs& attrs = {});

}  // namespace weft::ops
