// EvalSized: evaluates an Eigen tensor assignment on the device's intra-op threads when it is large
// and on the calling thread when it is small, where handing work to other threads costs more than
// it saves. Include only from kernel .cc files.
#pragma once

#include <algorithm>
#include <cstdint>

#include "weft/kernels/eigen_support.h"

namespace weft::kernels {

// Element count from which elementwise work is spread over the intra-op threads.
inline constexpr int64_t kParallelElements = 32 * 1024;

// Blocks of rows for sums over rows (a bias gradient): fixed by the shape alone, never by the
// thread count, so that the block sums, added in block order, do not depend on scheduling. At
// least kParallelElements elements a block (channels > 0) and at most about 64 blocks.
struct RowBlocks {
  int64_t rows_per_block;
  int64_t count;
};
inline RowBlocks FixedRowBlocks(int64_t rows, int64_t channels) {
  const int64_t per_block = std::max<int64_t>(
      1, std::max<int64_t>(kParallelElements / std::max<int64_t>(channels, 1), rows / 64));
  return {per_block, (rows + per_block - 1) / per_block};
}

// lhs = rhs, where `num_elements` is the size of lhs.
template <typename Lhs, typename Rhs>
void EvalSized(OpKernelContext* context, int64_t num_elements, Lhs lhs, const Rhs& rhs) {
  if (num_elements >= kParallelElements) {
    lhs.device(EigenDevice(context)) = rhs;
  } else {
    Eigen::DefaultDevice device;
    lhs.device(device) = rhs;
  }
}

}  // namespace weft::kernels
