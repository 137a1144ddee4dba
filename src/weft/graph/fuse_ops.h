// Fuses what one device's step runs back to back into single kernels, the way the reference
// system's remapper does: Conv2D -> BiasAdd (-> Relu) becomes _FusedConv2D and MatMul -> BiasAdd
// (-> Relu) becomes _FusedMatMul, a bfloat16 MatMul -> Cast to float32 (-> BiasAdd (-> Relu))
// becomes _FusedBFloat16MatMul (mixed precision's products), and MaxPoolGrad -> ReluGrad (whose
// features are the pooled input) becomes _FusedMaxPoolGrad, when each intermediate result has no
// other consumer (training graphs qualify: ReluGrad reads the Relu's output, which the fused node
// produces under the Relu's name). Saves a pass over memory per fused op and a node per step; on
// oneDNN the bias and ReLU are applied as the convolution writes its output. Runs on a partition's
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
