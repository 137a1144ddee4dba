// RegisterNnKernels: the list of the nn family's kernel files.
#include "weft/kernels/nn/nn_kernels.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {

void RegisterNnKernels(KernelRegistry& registry) {
  RegisterActivationKernels(registry);
  RegisterGeluKernels(registry);
  RegisterBiasAddKernels(registry);
  RegisterFusedBiasAddGradKernels(registry);
  RegisterSoftmaxKernels(registry);
  RegisterSparseXentKernels(registry);
  RegisterConvKernels(registry);
  RegisterConvGradKernels(registry);
  RegisterPoolingKernels(registry);
  RegisterAvgPoolingKernels(registry);
  RegisterFusedAttentionKernels(registry);
  RegisterFusedAttentionGradKernels(registry);
  RegisterLayerNormKernels(registry);
}

}  // namespace weft::kernels
