// The nn kernel family's files, each with one Register function; RegisterNnKernels calls them all.
#pragma once

#include "weft/framework/kernel_registry.h"

namespace weft::kernels {

void RegisterActivationKernels(KernelRegistry& registry);  // activation_ops.cc
void RegisterGeluKernels(KernelRegistry& registry);        // gelu_ops.cc: Gelu, GeluGrad
void RegisterBiasAddKernels(KernelRegistry& registry);     // bias_add_ops.cc
// fused_bias_add_grad_op.cc: _FusedBiasAddGrad
void RegisterFusedBiasAddGradKernels(KernelRegistry& registry);
void RegisterSoftmaxKernels(KernelRegistry& registry);     // softmax_ops.cc
void RegisterSparseXentKernels(KernelRegistry& registry);  // sparse_xent_op.cc
void RegisterConvKernels(KernelRegistry& registry);        // conv_ops.cc
void RegisterConvGradKernels(KernelRegistry& registry);    // conv_grad_ops.cc
void RegisterPoolingKernels(KernelRegistry& registry);     // pooling_ops.cc: MaxPool
void RegisterAvgPoolingKernels(KernelRegistry& registry);  // avg_pooling_ops.cc
void RegisterLayerNormKernels(KernelRegistry& registry);  // layer_norm_ops.cc: FusedLayerNorm(Grad)

// fused_attention_op.cc, fused_attention_grad_op.cc
void RegisterFusedAttentionKernels(KernelRegistry& registry);
void RegisterFusedAttentionGradKernels(KernelRegistry& registry);

}  // namespace weft::kernels
