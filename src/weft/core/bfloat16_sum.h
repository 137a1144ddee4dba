// Sums of bfloat16 arrays for the all-reduces that carry gradients in bfloat16: bfloat16 has no
// arithmetic of its own, so each block of the inputs is widened to float32, summed there in input
// order and rounded once, the way every member of a collective must sum to agree bit for bit.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "weft/core/bfloat16.h"

namespace weft {

// out[i] = bfloat16((inputs[0][i] + inputs[1][i] + ...) / divisor) for i < count, the sum taken
// in float32 left to right. `out` may alias an input; `divisor` 1 divides by nothing.
void SumBFloat16(std::span<const bfloat16* const> inputs, bfloat16* out, int64_t count,
                 float divisor);

}  // namespace weft
