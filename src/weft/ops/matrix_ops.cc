// Array ops, part 5: ops on the innermost matrices of a tensor [..., M, N]. MatrixBandPart keeps
// a band around the diagonal of each matrix and zeroes the rest (lower-triangular causal masks are
// MatrixBandPart(ones, -1, 0)).
#include <optional>
#include <string_view>
#include <vector>

#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

// input [..., M, N], num_lower and num_upper scalars -> [..., M, N]. A constant band count is
// checked against the matrix dim it counts along when that dim is known, as the kernel does: any
// negative value means the whole triangle, a value above M (N) is an error.
Status MatrixBandPartShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 2));
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 0));
  WEFT_RETURN_IF_ERROR(context.WithRank(2, 0));
  const PartialShape& input = context.input(0);
  struct Band {
    int input;
    std::string_view name;
    std::string_view dim_name;
    int64_t dim;
  };
  const int rank = input.rank_known() ? input.rank() : 0;
  const int64_t rows = input.rank_known() ? input.dim(rank - 2) : PartialShape::kUnknownDim;
  const int64_t cols = input.rank_known() ? input.dim(rank - 1) : PartialShape::kUnknownDim;
  for (const Band& band :
       {Band{1, "num_lower", "rows", rows}, Band{2, "num_upper", "columns", cols}}) {
    std::optional<std::vector<int64_t>> value = context.ConstantIntVector(band.input);
    if (!value || value->size() != 1 || band.dim < 0) continue;
    if ((*value)[0] > band.dim) {
      return context.Error(band.name, " must be negative or at most the number of ", band.dim_name,
                           " (", band.dim, "), but is ", (*value)[0]);
    }
  }
  context.set_output(0, input);
  return Status::OK();
}

}  // namespace

void RegisterMatrixOps(OpRegistry& registry) {
  registry.RegisterOrDie(
      OpDefBuilder("MatrixBandPart")
          .Input("input: T")
          .Input("num_lower: Tindex")
          .Input("num_upper: Tindex")
          .HostMemory("num_lower")
          .HostMemory("num_upper")
          .Output("band: T")
          .Attr("T: {float32, float64, int32, int64, uint8, bool, bfloat16}")
          .Attr("Tindex: {int32, int64} = int64")
          .SetShapeFn(MatrixBandPartShape)
          .Doc("Each innermost matrix with the elements outside its band set to zero: [m, n] is "
               "kept where (num_lower < 0 || m - n <= num_lower) && (num_upper < 0 || n - m <= "
               "num_upper)."));
}

}  // namespace weft::ops
