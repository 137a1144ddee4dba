// The attrs and input checks the fused attention kernels share; see fused_attention.h.
#include "weft/kernels/nn/fused_attention.h"

#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "weft/core/logging.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/tile_gemm_bf16.h"
#include "weft/ops/attention_ops.h"

namespace weft::kernels::attention {

Status ReadAttentionAttrs(OpKernelConstruction* context, AttentionAttrs* attrs) {
  WEFT_RETURN_IF_ERROR(context->GetAttr("causal", &attrs->causal));
  WEFT_RETURN_IF_ERROR(context->GetAttr("scale", &attrs->scale));
  std::string layout;
  WEFT_RETURN_IF_ERROR(context->GetAttr("layout", &layout));
  WEFT_ASSIGN_OR_RETURN(attrs->layout, ops::ParseAttentionLayout(layout));
  std::string precision;
  WEFT_RETURN_IF_ERROR(context->GetAttr("precision", &precision));
  attrs->bfloat16_products = precision == "bfloat16";
  DataType type = DataType::kFloat;
  WEFT_RETURN_IF_ERROR(context->GetAttr("T", &type));
  if (attrs->bfloat16_products && type != DataType::kFloat) {
    return InvalidArgument(FormatNodeForError(context->node_def()),
                           ": precision bfloat16 rounds float32 operands, but T is ",
                           DataTypeName(type));
  }
  return Status::OK();
}

bool UseBFloat16Products(const AttentionAttrs& attrs) {
  if (!attrs.bfloat16_products) return false;
  if (tile_bf16::TileGemmBFloat16IsAvailable()) return true;
  static std::once_flag logged;
  std::call_once(logged, [] {
    WEFT_LOG(INFO) << "this CPU lacks AVX512-BF16: FusedAttention with precision bfloat16 "
                      "multiplies in float32";
  });
  return false;
}

StatusOr<AttentionProblem> MakeAttentionProblem(const OpKernel& kernel, OpKernelContext* context,
                                                const AttentionAttrs& attrs) {
  std::vector<PartialShape> shapes;
  for (int i = 0; i < kernel.num_inputs(); ++i) shapes.emplace_back(context->input(i).shape());
  StatusOr<ops::AttentionDims> dims = ops::MergeAttentionShapes(shapes, attrs.layout);
  if (!dims.ok()) {
    return InvalidArgument(FormatNodeForError(kernel.def()), ": ", dims.status().message());
  }
  if (!std::isfinite(attrs.scale)) {
    return InvalidArgument(FormatNodeForError(kernel.def()),
                           ": scale must be finite (0 means 1/sqrt(depth)), but is ", attrs.scale);
  }
  AttentionProblem problem{.batch = dims->batch,
                           .heads = dims->heads,
                           .query_time = dims->query_time,
                           .key_time = dims->key_time,
                           .depth = dims->depth,
                           .value_depth = dims->value_depth,
                           .causal = attrs.causal,
                           .key_lengths = context->input(3).data<int32_t>(),
                           .time_major = attrs.layout == ops::AttentionLayout::kBatchTimeHeads};
  // Every operand is indexed as a row-major matrix with rows of depth or value_depth, and double
  // GEMMs go through BLAS's 32-bit ints.
  if (!FitsBlasInt({problem.query_time, problem.key_time, problem.depth, problem.value_depth})) {
    return InvalidArgument(FormatNodeForError(kernel.def()), ": dimensions of query ",
                           context->input(0).shape(), " and value ", context->input(2).shape(),
                           " exceed what BLAS can index");
  }
  for (int64_t b = 0; b < problem.batch; ++b) {
    const int32_t length = problem.key_lengths[b];
    if (length < 0 || length > problem.key_time) {
      return InvalidArgument(FormatNodeForError(kernel.def()), ": key_lengths[", b, "] is ", length,
                             ", but must be in [0, ", problem.key_time, "] (the key_time of key)");
    }
  }
  if (attrs.scale != 0) {
    problem.scale = attrs.scale;
  } else {
    // Depth 0 has all scores 0 whatever the scale; 1 avoids 1/sqrt(0).
    problem.scale = problem.depth > 0 ? 1 / std::sqrt(static_cast<double>(problem.depth)) : 1;
  }
  return problem;
}

}  // namespace weft::kernels::attention
