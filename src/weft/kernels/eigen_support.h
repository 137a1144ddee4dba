// Eigen glue for CPU kernels: tensor maps over weft::Tensor buffers and the device's intra-op
// thread pool. Include only from kernel .cc files: the Eigen Tensor module is heavy to compile.
#pragma once

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>

#include "weft/core/thread_pool.h"
#include "weft/framework/device_base.h"
#include "weft/framework/op_kernel.h"

namespace weft::kernels {

template <typename T, int Rank = 1>
using EigenTensorMap =
    Eigen::TensorMap<Eigen::Tensor<T, Rank, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Aligned>;
template <typename T, int Rank = 1>
using ConstEigenTensorMap =
    Eigen::TensorMap<Eigen::Tensor<const T, Rank, Eigen::RowMajor, Eigen::DenseIndex>,
                     Eigen::Aligned>;
// Views that may start at any address (a Slice of a tensor is not always 64-byte aligned).
template <typename T, int Rank = 1>
using UnalignedEigenTensorMap =
    Eigen::TensorMap<Eigen::Tensor<T, Rank, Eigen::RowMajor, Eigen::DenseIndex>>;
template <typename T, int Rank = 1>
using ConstUnalignedEigenTensorMap =
    Eigen::TensorMap<Eigen::Tensor<const T, Rank, Eigen::RowMajor, Eigen::DenseIndex>>;

// All elements of `t` as a rank-1 map.
template <typename T>
UnalignedEigenTensorMap<T> Flat(Tensor& t) {
  return UnalignedEigenTensorMap<T>(t.data<T>(), t.NumElements());
}
template <typename T>
ConstUnalignedEigenTensorMap<T> Flat(const Tensor& t) {
  return ConstUnalignedEigenTensorMap<T>(t.data<T>(), t.NumElements());
}

// `t` viewed with rank `Rank` (its dims must number Rank; checked by the caller's shape logic).
template <typename T, int Rank>
UnalignedEigenTensorMap<T, Rank> Shaped(Tensor& t,
                                        const std::array<Eigen::DenseIndex, Rank>& dims) {
  return UnalignedEigenTensorMap<T, Rank>(t.data<T>(), dims);
}
template <typename T, int Rank>
ConstUnalignedEigenTensorMap<T, Rank> Shaped(const Tensor& t,
                                             const std::array<Eigen::DenseIndex, Rank>& dims) {
  return ConstUnalignedEigenTensorMap<T, Rank>(t.data<T>(), dims);
}

// The device's intra-op Eigen device (checked non-null: every CPU device provides one).
inline const Eigen::ThreadPoolDevice& EigenDevice(OpKernelContext* context) {
  const Eigen::ThreadPoolDevice* device = context->device()->eigen_cpu_device();
  WEFT_CHECK(device != nullptr) << "device " << context->device()->name()
                                << " has no intra-op thread pool";
  return *device;
}

// Runs fn(begin, end) over shards of [0, total) on the intra-op threads. `cost_per_unit` is a
// rough number of cycles per unit, which decides how finely to shard.
template <typename Fn>
void ParallelFor(OpKernelContext* context, int64_t total, double cost_per_unit, Fn&& fn) {
  EigenDevice(context).parallelFor(
      total, Eigen::TensorOpCost(0, 0, cost_per_unit),
      [&fn](Eigen::Index begin, Eigen::Index end) { fn(int64_t{begin}, int64_t{end}); });
}

}  // namespace weft::kernels
