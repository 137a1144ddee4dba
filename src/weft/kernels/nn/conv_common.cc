// Shape checks and chunk planning shared by the Conv2D kernels; see conv_common.h.
#include "weft/kernels/nn/conv_common.h"

#include <climits>

#include "weft/core/bfloat16.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/gemm.h"

namespace weft::kernels {
namespace {

// Column buffer of one chunk: about an L2 cache, where im2col leaves it for the GEMM to read.
constexpr int64_t kColBufferBytes = int64_t{1} << 20;
// Whole-image chunks larger than this per task fall back to running chunks one at a time.
constexpr int64_t kMaxTaskBufferBytes = int64_t{64} << 20;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

}  // namespace

Status CheckConvShapes(const proto::NodeDef& node, const TensorShape& input,
                       const TensorShape& filter) {
  if (input.dims() != 4) {
    return InvalidArgument(FormatNodeForError(node),
                           ": input must be rank 4 [batch, rows, cols, channels], but has shape ",
                           input);
  }
  if (filter.dims() != 4) {
    return InvalidArgument(
        FormatNodeForError(node),
        ": filter must be rank 4 [rows, cols, in_channels, out_channels], but has shape ", filter);
  }
  if (input.dim_size(3) != filter.dim_size(2)) {
    return InvalidArgument(FormatNodeForError(node), ": input depth ", input.dim_size(3),
                           " does not match filter in_channels ", filter.dim_size(2), " (input ",
                           input, ", filter ", filter, ")");
  }
  if (filter.dim_size(0) == 0 || filter.dim_size(1) == 0) {
    return InvalidArgument(FormatNodeForError(node),
                           ": filter height and width must be positive, but filter has shape ",
                           filter);
  }
  return Status::OK();
}

Status CheckOutBackpropShape(const proto::NodeDef& node, const TensorShape& out_backprop,
                             const TensorShape& expected) {
  if (!(out_backprop == expected)) {
    return InvalidArgument(FormatNodeForError(node), ": out_backprop has shape ", out_backprop,
                           ", but the convolution of these input and filter sizes has shape ",
                           expected);
  }
  return Status::OK();
}

Status CheckConvGemmFitsBlas(const proto::NodeDef& node, const SpatialGeometry& g,
                             int64_t out_depth, const ConvPlan& plan) {
  const int64_t chunk_rows = std::min(plan.units, plan.units_per_chunk) * g.out_cols;
  if (FitsBlasInt({chunk_rows, g.patch_size(), out_depth})) return Status::OK();
  return InvalidArgument(FormatNodeForError(node), ": a GEMM of ", chunk_rows, " rows, patch size ",
                         g.patch_size(), " and output depth ", out_depth,
                         " exceeds what BLAS can index (", INT_MAX, ")");
}

ConvPlan PlanConvChunks(const SpatialGeometry& g, int64_t element_bytes, int intra_op_threads,
                        bool whole_images) {
  ConvPlan plan;
  plan.units = g.batch * g.out_rows;
  if (plan.units == 0) return plan;
  const int64_t unit_bytes = std::max<int64_t>(1, g.out_cols * g.patch_size() * element_bytes);
  plan.units_per_chunk = std::clamp<int64_t>(kColBufferBytes / unit_bytes, 1, plan.units);
  const int64_t threads = intra_op_threads;
  bool concurrent = threads > 1 && BlasIsSingleThreaded();
  if (concurrent && whole_images && g.out_rows * unit_bytes > kMaxTaskBufferBytes) {
    concurrent = false;
  }
  if (concurrent) {
    // Enough chunks for an equal share per task; whole images when asked.
    if (whole_images) {
      int64_t images_per_chunk = std::max<int64_t>(1, plan.units_per_chunk / g.out_rows);
      int64_t chunks = std::min(g.batch, RoundUp(CeilDiv(g.batch, images_per_chunk), threads));
      plan.units_per_chunk = CeilDiv(g.batch, chunks) * g.out_rows;
    } else {
      int64_t chunks =
          std::min(plan.units, RoundUp(CeilDiv(plan.units, plan.units_per_chunk), threads));
      plan.units_per_chunk = CeilDiv(plan.units, chunks);
    }
  }
  plan.num_chunks = CeilDiv(plan.units, plan.units_per_chunk);
  plan.num_tasks = concurrent ? std::min(threads, plan.num_chunks) : 1;
  return plan;
}

StatusOr<Tensor> WidenBFloat16(const Tensor& tensor) {
  WEFT_ASSIGN_OR_RETURN(Tensor wide, Tensor::Allocate(DataType::kFloat, tensor.shape()));
  BFloat16ToFloat({tensor.data<bfloat16>(), static_cast<size_t>(tensor.NumElements())},
                  wide.data<float>());
  return wide;
}

Status NarrowToBFloat16(const Tensor& from, Tensor* to) {
  if (from.NumElements() != to->NumElements()) {
    return Internal("rounding ", from.NumElements(), " float32 values into ", to->NumElements());
  }
  FloatToBFloat16({from.data<float>(), static_cast<size_t>(from.NumElements())},
                  to->data<bfloat16>());
  return Status::OK();
}

}  // namespace weft::kernels
