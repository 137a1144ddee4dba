// Fuses what one device's step runs back to back into single kernels, the way the reference
// system's remapper does:
//   Conv2D -> BiasAdd (-> Relu)                                   _FusedConv2D
//   MatMul -> BiasAdd (-> Relu)                                   _FusedMatMul
//   bfloat16 MatMul -> Cast to float32 (-> BiasAdd (-> Relu))     _FusedBFloat16MatMul
//   MaxPoolGrad -> ReluGrad (features: the pooled input)          _FusedMaxPoolGrad
//   float32 Gelu -> Cast to bfloat16                              _FusedGelu
//   float32 FusedLayerNorm -> only Casts to bfloat16              _FusedLayerNorm (y in bfloat16)
//   (GeluGrad ->) gradient read by BiasAddGrad and a Cast to bfloat16   _FusedBiasAddGrad
// when each intermediate result has no other consumer (training graphs qualify: ReluGrad reads the
// Relu's output, which the fused node produces under the Relu's name). The last four are mixed
// precision's: its products take bfloat16, so the float32 results before them are only rounded.
// Saves a pass over memory per fused op and a node per step; on oneDNN the bias and ReLU are
// applied as the convolution writes its output. A fused node takes the name of the chain's last
// node; a node whose output another takes over becomes an Identity of it. Runs on a partition's
// GraphDef (every node on one device) before its executor is built. Stateless.
#pragma once

#include <string_view>

#include "weft/framework/kernel_registry.h"
#include "weft/graph.pb.h"

namespace weft {

// Rewrites `graph` (one device's partition) in place; a fusion happens only where `kernels` has a
// kernel for the fused node on `device_type`. Returns how many fused nodes it made.
int FuseOps(const KernelRegistry& kernels, std::string_view device_type, proto::GraphDef* graph);

}  // namespace weft
