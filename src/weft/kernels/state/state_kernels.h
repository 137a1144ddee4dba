// The state kernel families, one per file of this folder; RegisterStateKernels calls them all.
#pragma once

#include "weft/framework/kernel_registry.h"

namespace weft::kernels::state {

// variable_ops.cc: VarHandleOp, ReadVariableOp, AssignVariableOp, AssignAddVariableOp,
// AssignSubVariableOp, VarIsInitializedOp, DestroyResourceOp.
void RegisterVariableKernels(KernelRegistry& registry);
// random_ops.cc: RandomUniform, RandomStandardNormal, TruncatedNormal.
void RegisterRandomKernels(KernelRegistry& registry);
// training_ops.cc: ResourceApplyGradientDescent, ResourceApplyMomentum, ResourceApplyAdagradV2,
// ResourceApplyAdam, ResourceApplyAdamW.
void RegisterTrainingKernels(KernelRegistry& registry);
// sparse_training_ops.cc: ResourceSparseApplyGradientDescent, ResourceSparseApplyAdagradV2,
// ResourceSparseApplyAdam (rows named by indices only).
void RegisterSparseTrainingKernels(KernelRegistry& registry);
// staging_ops.cc: _StageTensors, _UnstageTensors, _DiscardStagedTensors.
void RegisterStagingKernels(KernelRegistry& registry);

}  // namespace weft::kernels::state
