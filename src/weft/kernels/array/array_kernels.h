// The array kernel families, one per file of this folder; RegisterArrayKernels calls them all.
#pragma once

#include "weft/framework/kernel_registry.h"

namespace weft::kernels::array {

void RegisterConstKernels(KernelRegistry& registry);  // const_op.cc: Const, Placeholder
void RegisterIdentityKernels(
    KernelRegistry& registry);  // identity_op.cc: Identity, StopGradient, NoOp
void RegisterShapeKernels(KernelRegistry& registry);  // shape_op.cc: Shape, Size, Rank
void RegisterReshapeKernels(
    KernelRegistry& registry);                       // reshape_op.cc: Reshape, ExpandDims, Squeeze
void RegisterFillKernels(KernelRegistry& registry);  // fill_op.cc: Fill, ZerosLike, OnesLike
void RegisterTransposeKernels(KernelRegistry& registry);  // transpose_op.cc
void RegisterConcatKernels(KernelRegistry& registry);     // concat_op.cc: ConcatV2
void RegisterSliceKernels(KernelRegistry& registry);      // slice_op.cc
void RegisterTileKernels(KernelRegistry& registry);       // tile_op.cc: Tile, BroadcastTo
void RegisterGatherKernels(
    KernelRegistry& registry);  // gather_ops.cc: GatherV2, UnsortedSegmentSum
void RegisterPartitionKernels(
    KernelRegistry& registry);  // partition_ops.cc: DynamicPartition, DynamicStitch, Range
void RegisterMatrixBandPartKernels(KernelRegistry& registry);  // matrix_band_part_op.cc

}  // namespace weft::kernels::array
