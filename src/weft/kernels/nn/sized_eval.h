// EvalSized: evaluates an Eigen tensor assignment on the device's intra-op threads when it is large
// and on the calling thread when it is small, where handing work to other threads costs more than
// it saves. Include only from kernel .cc files.
#pragma once

#include <cstdint>

#include "weft/kernels/eigen_support.h"

namespace weft::kernels {

// Element count from which elementwise work is spread over the intra-op threads.
inline constexpr int64_t kParallelElements = 32 * 1024;

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
