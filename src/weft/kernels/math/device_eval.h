// Chooses where a math kernel evaluates an Eigen expression: on the device's intra-op thread pool
// for large tensors, or inline on the calling thread for small ones, where handing work to other
// threads costs more than it saves.
#pragma once

#include <cstdint>

#include "weft/kernels/eigen_support.h"

namespace weft::kernels {

// Below this many elements an elementwise expression runs on the calling thread.
inline constexpr int64_t kMinParallelElements = 32 * 1024;

// Calls fn(device) with the Eigen device to evaluate on, for an expression over `num_elements`
// elements; fn is a generic lambda: [&](const auto& device) { out.device(device) = expr; }.
template <typename Fn>
void EvaluateOnDevice(OpKernelContext* context, int64_t num_elements, Fn&& fn) {
  if (num_elements < kMinParallelElements) {
    Eigen::DefaultDevice device;
    fn(device);
  } else {
    fn(EigenDevice(context));
  }
}

}  // namespace weft::kernels
