// Fused scaled dot-product attention: FusedAttention and the FusedAttentionGrad its gradient
// emits. For each batch entry b and head h, with s the scale and L = key_lengths[b]:
//   score[i, j] = s * query[i] . key[j]          for keys j the query row i may attend
//   output[i]   = sum_j softmax_j(score[i]) value[j]
//   logsumexp[i] = log sum_j exp(score[i, j])
// Row i of the queries may attend key j when j < L and, with causal, j <= i + (key_time -
// query_time): the causal mask is aligned to the bottom-right corner, so the last query sees every
// key, as for queries appended after a key/value cache. A row that may attend no key (L = 0, or an
// early row when query_time > key_time under causal) gets output 0 and logsumexp +inf, so that
// exp(score - logsumexp) is 0 for every key and the row passes no gradient back.
#include "weft/ops/attention_ops.h"

#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

enum Axis { kBatch, kHeads, kQueryTime, kKeyTime, kDepth, kValueDepth, kNumAxes };
constexpr std::array<std::string_view, kNumAxes> kAxisNames = {"batch",    "heads", "query_time",
                                                               "key_time", "depth", "value_depth"};

// Which attention dimension each dimension of an input is.
struct InputLayout {
  std::string_view name;
  int rank;
  std::array<Axis, 4> axes;  // the first `rank` are used
};
constexpr std::array<InputLayout, 7> kHeadsMajorLayouts = {{
    {"query", 4, {kBatch, kHeads, kQueryTime, kDepth}},
    {"key", 4, {kBatch, kHeads, kKeyTime, kDepth}},
    {"value", 4, {kBatch, kHeads, kKeyTime, kValueDepth}},
    {"key_lengths", 1, {kBatch}},
    {"output", 4, {kBatch, kHeads, kQueryTime, kValueDepth}},
    {"logsumexp", 3, {kBatch, kHeads, kQueryTime}},
    {"output_gradient", 4, {kBatch, kHeads, kQueryTime, kValueDepth}},
}};
constexpr std::array<InputLayout, 7> kTimeMajorLayouts = {{
    {"query", 4, {kBatch, kQueryTime, kHeads, kDepth}},
    {"key", 4, {kBatch, kKeyTime, kHeads, kDepth}},
    {"value", 4, {kBatch, kKeyTime, kHeads, kValueDepth}},
    {"key_lengths", 1, {kBatch}},
    {"output", 4, {kBatch, kQueryTime, kHeads, kValueDepth}},
    {"logsumexp", 3, {kBatch, kHeads, kQueryTime}},
    {"output_gradient", 4, {kBatch, kQueryTime, kHeads, kValueDepth}},
}};

// "[batch, heads, query_time, depth]".
std::string Describe(const InputLayout& layout) {
  std::string out = "[";
  for (int a = 0; a < layout.rank; ++a) {
    out += StrCat(a > 0 ? ", " : "", kAxisNames[layout.axes[a]]);
  }
  return out + "]";
}

Status CheckScale(const InferenceContext& context) {
  float scale = 0;
  WEFT_RETURN_IF_ERROR(context.GetAttr("scale", &scale));
  if (!std::isfinite(scale)) {
    return context.Error("scale must be finite (0 means 1/sqrt(depth)), but is ", scale);
  }
  return Status::OK();
}

StatusOr<AttentionLayout> GetLayout(const InferenceContext& context) {
  std::string layout;
  WEFT_RETURN_IF_ERROR(context.GetAttr("layout", &layout));
  StatusOr<AttentionLayout> parsed = ParseAttentionLayout(layout);
  if (!parsed.ok()) return context.Error(parsed.status().message());
  return parsed;
}

// [batch, heads, time, depth] or [batch, time, heads, depth] as `layout` says.
PartialShape HeadsShape(AttentionLayout layout, int64_t batch, int64_t heads, int64_t time,
                        int64_t depth) {
  return layout == AttentionLayout::kBatchTimeHeads ? PartialShape({batch, time, heads, depth})
                                                    : PartialShape({batch, heads, time, depth});
}

StatusOr<AttentionDims> MergeInputs(InferenceContext& context, AttentionLayout layout) {
  WEFT_RETURN_IF_ERROR(CheckScale(context));
  std::vector<PartialShape> inputs;
  for (int i = 0; i < context.num_inputs(); ++i) inputs.push_back(context.input(i));
  StatusOr<AttentionDims> dims = MergeAttentionShapes(inputs, layout);
  if (!dims.ok()) return context.Error(dims.status().message());
  return dims;
}

// query, key, value, key_lengths -> output [B, H, Tq, Dv], logsumexp [B, H, Tq].
Status FusedAttentionShape(InferenceContext& context) {
  WEFT_ASSIGN_OR_RETURN(const AttentionLayout layout, GetLayout(context));
  WEFT_ASSIGN_OR_RETURN(AttentionDims d, MergeInputs(context, layout));
  context.set_output(0, HeadsShape(layout, d.batch, d.heads, d.query_time, d.value_depth));
  context.set_output(1, PartialShape({d.batch, d.heads, d.query_time}));
  return Status::OK();
}

// The forward's inputs and outputs and output_gradient -> the gradients of query, key and value,
// each of its input's shape.
Status FusedAttentionGradShape(InferenceContext& context) {
  WEFT_ASSIGN_OR_RETURN(const AttentionLayout layout, GetLayout(context));
  WEFT_ASSIGN_OR_RETURN(AttentionDims d, MergeInputs(context, layout));
  context.set_output(0, HeadsShape(layout, d.batch, d.heads, d.query_time, d.depth));
  context.set_output(1, HeadsShape(layout, d.batch, d.heads, d.key_time, d.depth));
  context.set_output(2, HeadsShape(layout, d.batch, d.heads, d.key_time, d.value_depth));
  return Status::OK();
}

}  // namespace

StatusOr<AttentionLayout> ParseAttentionLayout(std::string_view layout) {
  if (layout == "BHTD") return AttentionLayout::kBatchHeadsTime;
  if (layout == "BTHD") return AttentionLayout::kBatchTimeHeads;
  return InvalidArgument("layout must be BHTD or BTHD, but is '", layout, "'");
}

StatusOr<AttentionDims> MergeAttentionShapes(const std::vector<PartialShape>& inputs,
                                             AttentionLayout input_layout) {
  const std::array<InputLayout, 7>& layouts =
      input_layout == AttentionLayout::kBatchTimeHeads ? kTimeMajorLayouts : kHeadsMajorLayouts;
  if (inputs.size() != 4 && inputs.size() != 7) {
    return InvalidArgument("attention takes 4 or 7 inputs, but has ", inputs.size());
  }
  std::array<int64_t, kNumAxes> dims;
  dims.fill(PartialShape::kUnknownDim);
  std::array<size_t, kNumAxes> source{};  // the input that set each known dim
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputLayout& layout = layouts[i];
    const PartialShape& shape = inputs[i];
    if (!shape.rank_known()) continue;
    if (shape.rank() != layout.rank) {
      return InvalidArgument(layout.name, " must have rank ", layout.rank, " ", Describe(layout),
                             ", but has shape ", shape.DebugString());
    }
    for (int a = 0; a < layout.rank; ++a) {
      const Axis axis = layout.axes[a];
      const int64_t d = shape.dim(a);
      if (d < 0) continue;
      if (dims[axis] < 0) {
        dims[axis] = d;
        source[axis] = i;
      } else if (dims[axis] != d) {
        return InvalidArgument(layout.name, " has ", kAxisNames[axis], " ", d, " (dimension ", a,
                               " of ", shape.DebugString(), "), but ", layouts[source[axis]].name,
                               " has ", dims[axis]);
      }
    }
  }
  return AttentionDims{.batch = dims[kBatch],
                       .heads = dims[kHeads],
                       .query_time = dims[kQueryTime],
                       .key_time = dims[kKeyTime],
                       .depth = dims[kDepth],
                       .value_depth = dims[kValueDepth]};
}

void RegisterAttentionOps(OpRegistry& registry) {
  registry.RegisterOrDie(
      OpDefBuilder("FusedAttention")
          .Input("query: T")
          .Input("key: T")
          .Input("value: T")
          .Input("key_lengths: int32")
          .HostMemory("key_lengths")
          .Output("output: T")
          .Output("logsumexp: T")
          .Attr("T: {float32, float64}")
          .Attr("causal: bool = false")
          .Attr("scale: float = 0")
          .Attr("layout: {'BHTD', 'BTHD'} = 'BHTD'")
          .Attr("precision: {'float32', 'bfloat16'} = 'float32'")
          .SetShapeFn(FusedAttentionShape)
          .Doc("softmax(scale * query key^T, masked) value per batch entry and head, without "
               "keeping the [query_time, key_time] probabilities: keys at or beyond "
               "key_lengths[b] are masked, and with causal those after i + key_time - query_time "
               "for query row i (bottom-right aligned); scale 0 means 1/sqrt(depth). logsumexp is "
               "each row's log-sum-exp of its scores, +inf for a row with no key, kept for the "
               "gradient. layout BTHD takes and gives [batch, time, heads, depth] instead of "
               "[batch, "
               "heads, time, depth] (logsumexp is [batch, heads, query_time] either way). "
               "precision bfloat16 (float32 only) lets the products take operands rounded to "
               "bfloat16 (query, key, value, the probabilities) with float32 sums, scores and "
               "softmax statistics, where the CPU has AVX512-BF16; elsewhere it multiplies in "
               "float32."));
  registry.RegisterOrDie(
      OpDefBuilder("FusedAttentionGrad")
          .Input("query: T")
          .Input("key: T")
          .Input("value: T")
          .Input("key_lengths: int32")
          .Input("output: T")
          .Input("logsumexp: T")
          .Input("output_gradient: T")
          .HostMemory("key_lengths")
          .Output("query_gradient: T")
          .Output("key_gradient: T")
          .Output("value_gradient: T")
          .Attr("T: {float32, float64}")
          .Attr("causal: bool = false")
          .Attr("scale: float = 0")
          .Attr("layout: {'BHTD', 'BTHD'} = 'BHTD'")
          .Attr("precision: {'float32', 'bfloat16'} = 'float32'")
          .SetIsInternal()
          .SetShapeFn(FusedAttentionGradShape)
          .Doc("The gradients of FusedAttention's query, key and value given the gradient of its "
               "output, recomputing the probabilities block by block from logsumexp, under the "
               "forward op's causal, scale, layout and precision (bfloat16 also rounds the "
               "output gradient and the scores' gradient for the products)."));
}

}  // namespace weft::ops
