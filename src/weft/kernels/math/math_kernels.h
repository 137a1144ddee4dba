// The math kernel family's internal registration list: each file under kernels/math/ registers
// its kernels through one of these; RegisterMathKernels (register_math_kernels.cc) calls them all.
#pragma once

#include "weft/framework/kernel_registry.h"

namespace weft::kernels {

void RegisterCwiseArithKernels(KernelRegistry& registry);    // cwise_arith_ops.cc: Add, Sub, Mul
void RegisterCwiseDivMaxKernels(KernelRegistry& registry);   // cwise_div_max_ops.cc: Div, Max, Min
void RegisterCwiseEqualKernels(KernelRegistry& registry);    // cwise_equal_op.cc: Equal
void RegisterCwiseCompareKernels(KernelRegistry& registry);  // cwise_compare_ops.cc: Less, ...
void RegisterSelectKernels(KernelRegistry& registry);        // select_op.cc: SelectV2
void RegisterCwiseUnaryKernels(KernelRegistry& registry);    // cwise_unary_ops.cc
void RegisterAddNKernels(KernelRegistry& registry);          // add_n_op.cc
void RegisterMatMulKernels(KernelRegistry& registry);        // matmul_op.cc
void RegisterBatchMatMulKernels(KernelRegistry& registry);   // batch_matmul_op.cc
void RegisterReductionKernels(KernelRegistry& registry);     // reduction_ops.cc: Sum, Mean, Max
void RegisterArgMaxKernels(KernelRegistry& registry);        // argmax_op.cc
void RegisterCastKernels(KernelRegistry& registry);          // cast_op.cc
void RegisterBroadcastGradientArgsKernels(
    KernelRegistry& registry);  // broadcast_gradient_args_op.cc

}  // namespace weft::kernels
