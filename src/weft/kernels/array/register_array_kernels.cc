// RegisterArrayKernels: the list of array kernel families (see array_kernels.h).
#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {

void RegisterArrayKernels(KernelRegistry& registry) {
  array::RegisterConstKernels(registry);
  array::RegisterIdentityKernels(registry);
  array::RegisterShapeKernels(registry);
  array::RegisterReshapeKernels(registry);
  array::RegisterFillKernels(registry);
  array::RegisterTransposeKernels(registry);
  array::RegisterConcatKernels(registry);
  array::RegisterSliceKernels(registry);
  array::RegisterTileKernels(registry);
  array::RegisterGatherKernels(registry);
  array::RegisterPartitionKernels(registry);
  array::RegisterMatrixBandPartKernels(registry);
}

}  // namespace weft::kernels
