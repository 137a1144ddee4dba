// SumBFloat16: blocks of float32 that stay in L1 while every input is added to them.
#include "weft/core/bfloat16_sum.h"

#include <algorithm>

namespace weft {

void SumBFloat16(std::span<const bfloat16* const> inputs, bfloat16* out, int64_t count,
                 float divisor) {
  if (inputs.empty() || count <= 0) return;
  constexpr int64_t kBlock = 4096;
  float sum[kBlock];
  float next[kBlock];
  for (int64_t start = 0; start < count; start += kBlock) {
    const size_t len = static_cast<size_t>(std::min(kBlock, count - start));
    BFloat16ToFloat({inputs[0] + start, len}, sum);
    for (size_t m = 1; m < inputs.size(); ++m) {
      BFloat16ToFloat({inputs[m] + start, len}, next);
      for (size_t i = 0; i < len; ++i) sum[i] = sum[i] + next[i];
    }
    if (divisor != 1.0f) {
      for (size_t i = 0; i < len; ++i) sum[i] = sum[i] / divisor;
    }
    FloatToBFloat16({sum, len}, out + start);
  }
}

}  // namespace weft
