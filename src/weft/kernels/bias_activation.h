// The tail of a fused kernel (_FusedConv2D, _FusedMatMul): adds bias [depth] to every row of a
// [rows, depth] result in place and then applies the activation, in one pass over memory the
// kernel just wrote, sharded over the intra-op threads. Also reads the fused ops' attr and checks
// the bias shape with messages naming the node.
#pragma once

#include <cstdint>
#include <string>

#include "weft/framework/node_def_util.h"
#include "weft/framework/op_kernel.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels {

enum class FusedActivation { kNone, kRelu };

// The `activation` attr of a fused node ('None' or 'Relu'); kNone for a node of another op.
inline Status ReadFusedActivation(const OpKernelConstruction& context, bool fused,
                                  FusedActivation* activation) {
  *activation = FusedActivation::kNone;
  if (!fused) return Status::OK();
  std::string name;
  WEFT_RETURN_IF_ERROR(context.GetAttr("activation", &name));
  if (name == "Relu") *activation = FusedActivation::kRelu;
  return Status::OK();
}

// InvalidArgument naming `node` unless bias is a vector of `depth` values.
inline Status CheckBias(const proto::NodeDef& node, const Tensor& bias, int64_t depth) {
  if (bias.dims() != 1 || bias.dim_size(0) != depth) {
    return InvalidArgument(FormatNodeForError(node), ": bias must be a vector of ", depth,
                           " values (the output depth), but has shape ", bias.shape());
  }
  return Status::OK();
}

template <typename T>
void AddBiasAndActivation(OpKernelContext* context, T* data, int64_t rows, int64_t depth,
                          const T* bias, FusedActivation activation) {
  const bool relu = activation == FusedActivation::kRelu;
  ParallelFor(context, rows, static_cast<double>(depth) * 2, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      T* out = data + row * depth;
      if (relu) {
        for (int64_t d = 0; d < depth; ++d) {
          const T v = out[d] + bias[d];
          out[d] = v > T(0) ? v : T(0);
        }
      } else {
        for (int64_t d = 0; d < depth; ++d) out[d] += bias[d];
      }
    }
  });
}

}  // namespace weft::kernels
