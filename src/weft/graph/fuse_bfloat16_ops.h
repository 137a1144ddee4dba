// Mixed precision's fusions (the table in fuse_ops.h): under the mixed_bfloat16 policy the float32
// results before each product are only rounded to bfloat16 and the product's gradients are widened
// back, so the roundings fuse with what produced them and the widenings with the products. Internal
// to graph/ (FuseOps calls these); stateless.
#pragma once

#include <string_view>

#include "weft/framework/kernel_registry.h"
#include "weft/graph/fuse_ops_util.h"

namespace weft::fusion {

// Moves every Cast to bfloat16 that reads a Reshape (read by nothing else but Shape ops) above
// that Reshape, so that the rounding follows what produced the values: the layers flatten their
// inputs before their products round them. Returns how many it moved.
int HoistRoundingCasts(proto::GraphDef* graph);

// The _FusedBFloat16MatMul standing for matmul -> widen (-> bias_add (-> relu)), named like the
// chain's last node.
proto::NodeDef MakeFusedBFloat16(const proto::NodeDef& matmul, const proto::NodeDef& widen,
                                 const proto::NodeDef* bias_add, const proto::NodeDef* relu);

// Fuses the rounding patterns that meet at `node`: a Cast to bfloat16 of a Gelu (_FusedGelu), a
// FusedLayerNorm whose output only such Casts read (_FusedLayerNorm), a BiasAddGrad whose input a
// Cast to bfloat16 also reads (_FusedBiasAddGrad, with the GeluGrad before it). Returns whether
// `node` is one of those ops (handled, whether or not it fused); adds what fused to `rewrites` and
// counts it in *fused.
bool FuseRounding(const Fuser& fuser, const KernelRegistry& kernels, std::string_view device_type,
                  const proto::NodeDef& node, Rewrites* rewrites, int* fused);

}  // namespace weft::fusion
