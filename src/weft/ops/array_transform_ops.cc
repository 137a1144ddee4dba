// Array ops, part 2: ops that move elements into a new layout — Transpose, ConcatV2, Slice,
// BroadcastTo and Tile. Their shape functions use constant perm/axis/begin/size/shape/multiples
// inputs when the graph provides them, and fall back to what the ranks alone say.
#include <algorithm>
#include <optional>

#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

constexpr char kDataTypes[] = "{float32, float64, int32, int64, uint8, bool, bfloat16}";

// The elements of a constant int32 or int64 input, widened to int64.
std::vector<int64_t> IndexValues(const Tensor& t) {
  std::vector<int64_t> values(static_cast<size_t>(t.NumElements()));
  if (t.dtype() == DataType::kInt32) {
    std::copy_n(t.data<int32_t>(), values.size(), values.begin());
  } else {
    std::copy_n(t.data<int64_t>(), values.size(), values.begin());
  }
  return values;
}

// The values of constant input `i`, when it is constant.
std::optional<std::vector<int64_t>> ConstantIndices(const InferenceContext& context, int i) {
  const Tensor* tensor = context.input_tensor(i);
  if (tensor == nullptr) return std::nullopt;
  return IndexValues(*tensor);
}

// The length of vector input `i` when known, else -1.
int64_t VectorLength(const InferenceContext& context, int i) {
  const PartialShape& shape = context.input(i);
  return shape.rank() == 1 ? shape.dim(0) : -1;
}

// Checks that a vector input of length `length` (-1: unknown) fits the input rank `rank`
// (-1: unknown); returns the rank when either is known, else -1.
StatusOr<int64_t> AgreeOnRank(const InferenceContext& context, int64_t rank, int64_t length,
                              std::string_view what) {
  if (rank >= 0 && length >= 0 && rank != length) {
    return context.Error(what, " has ", length, " entries, but the input has rank ", rank);
  }
  return rank >= 0 ? rank : length;
}

void SetUnknownOfRank(InferenceContext& context, int64_t rank) {
  context.set_output(0, rank >= 0 ? PartialShape::UnknownOfRank(static_cast<int>(rank))
                                  : PartialShape::UnknownRank());
}

Status TransposeShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 1));
  const PartialShape& in = context.input(0);
  std::optional<std::vector<int64_t>> perm = ConstantIndices(context, 1);
  int64_t length = perm ? static_cast<int64_t>(perm->size()) : VectorLength(context, 1);
  WEFT_ASSIGN_OR_RETURN(int64_t rank, AgreeOnRank(context, in.rank(), length, "perm"));
  if (!perm) {
    SetUnknownOfRank(context, rank);
    return Status::OK();
  }
  std::vector<bool> seen(perm->size(), false);
  std::vector<int64_t> dims(perm->size(), PartialShape::kUnknownDim);
  for (size_t i = 0; i < perm->size(); ++i) {
    int64_t p = (*perm)[i];
    if (p < 0 || p >= rank || seen[p]) {
      return context.Error("perm [", StrJoin(*perm, ","), "] is not a permutation of 0..",
                           rank - 1);
    }
    seen[p] = true;
    if (in.rank_known()) dims[i] = in.dim(static_cast<int>(p));
  }
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

Status ConcatShape(InferenceContext& context) {
  const int n = context.num_inputs() - 1;  // values are inputs [0, n); the axis is input n
  WEFT_RETURN_IF_ERROR(context.WithRank(n, 0));
  int rank = -1;
  for (int i = 0; i < n; ++i) {
    const PartialShape& shape = context.input(i);
    if (!shape.rank_known()) continue;
    if (rank >= 0 && shape.rank() != rank) {
      return context.Error("all inputs must have the same rank, but input 0 has shape ",
                           context.input(0).DebugString(), " and input ", i, " has shape ",
                           shape.DebugString());
    }
    rank = shape.rank();
  }
  if (rank == 0) return context.Error("cannot concatenate scalars");
  std::optional<std::vector<int64_t>> axis_value = ConstantIndices(context, n);
  if (rank < 0 || !axis_value) {
    SetUnknownOfRank(context, rank);
    return Status::OK();
  }
  int64_t axis = (*axis_value)[0];
  if (axis < -rank || axis >= rank) {
    return context.Error("axis ", axis, " is out of range [", -rank, ", ", rank, ")");
  }
  if (axis < 0) axis += rank;
  std::vector<int64_t> dims(rank, PartialShape::kUnknownDim);
  dims[axis] = 0;
  for (int i = 0; i < n; ++i) {
    const PartialShape& shape = context.input(i);
    if (!shape.rank_known()) {
      dims[axis] = PartialShape::kUnknownDim;
      continue;
    }
    for (int d = 0; d < rank; ++d) {
      int64_t size = shape.dim(d);
      if (d == axis) {
        dims[d] = (dims[d] < 0 || size < 0) ? PartialShape::kUnknownDim : dims[d] + size;
      } else if (size >= 0) {
        if (dims[d] >= 0 && dims[d] != size) {
          return context.Error("dimension ", d, " of the inputs must agree outside axis ", axis,
                               ", but input ", i, " has shape ", shape.DebugString(),
                               " where an earlier input has size ", dims[d]);
        }
        dims[d] = size;
      }
    }
  }
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

Status SliceShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 1));
  WEFT_RETURN_IF_ERROR(context.WithRank(2, 1));
  const PartialShape& in = context.input(0);
  std::optional<std::vector<int64_t>> begin = ConstantIndices(context, 1);
  std::optional<std::vector<int64_t>> size = ConstantIndices(context, 2);
  int64_t begin_length = begin ? static_cast<int64_t>(begin->size()) : VectorLength(context, 1);
  int64_t size_length = size ? static_cast<int64_t>(size->size()) : VectorLength(context, 2);
  WEFT_ASSIGN_OR_RETURN(int64_t rank, AgreeOnRank(context, in.rank(), begin_length, "begin"));
  WEFT_ASSIGN_OR_RETURN(rank, AgreeOnRank(context, rank, size_length, "size"));
  if (rank < 0) {
    context.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  std::vector<int64_t> dims(rank, PartialShape::kUnknownDim);
  for (int i = 0; i < rank; ++i) {
    int64_t dim = in.rank_known() ? in.dim(i) : PartialShape::kUnknownDim;
    std::optional<int64_t> b, s;
    if (begin) b = (*begin)[i];
    if (size) s = (*size)[i];
    bool bad = (b && (*b < 0 || (dim >= 0 && *b > dim))) || (s && *s < -1) ||
               (s && *s >= 0 && dim >= 0 && (b ? *b : 0) + *s > dim);
    if (bad) {
      return context.Error("slice begin [", begin ? StrJoin(*begin, ",") : "?", "] size [",
                           size ? StrJoin(*size, ",") : "?", "] is out of bounds for shape ",
                           in.DebugString(), " in dimension ", i);
    }
    if (s && *s >= 0) {
      dims[i] = *s;
    } else if (s && b && dim >= 0) {
      dims[i] = dim - *b;
    }
  }
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

Status BroadcastToShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 1));
  const PartialShape& in = context.input(0);
  std::optional<std::vector<int64_t>> target = ConstantIndices(context, 1);
  int64_t length = target ? static_cast<int64_t>(target->size()) : VectorLength(context, 1);
  if (in.rank_known() && length >= 0 && in.rank() > length) {
    return context.Error("cannot broadcast shape ", in.DebugString(), " to a shape of rank ",
                         length);
  }
  if (!target) {
    SetUnknownOfRank(context, length);
    return Status::OK();
  }
  StatusOr<TensorShape> shape = TensorShape::Create(*target);
  if (!shape.ok()) {
    return context.Error("bad shape [", StrJoin(*target, ","), "]: ", shape.status().message());
  }
  if (in.rank_known()) {
    int offset = static_cast<int>(length) - in.rank();
    for (int i = 0; i < in.rank(); ++i) {
      int64_t d = in.dim(i), t = (*target)[offset + i];
      if (d >= 0 && d != 1 && d != t) {
        return context.Error("cannot broadcast shape ", in.DebugString(), " to [",
                             StrJoin(*target, ","), "]");
      }
    }
  }
  context.set_output(0, PartialShape(*shape));
  return Status::OK();
}

Status TileShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 1));
  const PartialShape& in = context.input(0);
  std::optional<std::vector<int64_t>> multiples = ConstantIndices(context, 1);
  int64_t length = multiples ? static_cast<int64_t>(multiples->size()) : VectorLength(context, 1);
  WEFT_ASSIGN_OR_RETURN(int64_t rank, AgreeOnRank(context, in.rank(), length, "multiples"));
  if (!multiples) {
    SetUnknownOfRank(context, rank);
    return Status::OK();
  }
  std::vector<int64_t> dims(rank, PartialShape::kUnknownDim);
  for (int i = 0; i < rank; ++i) {
    int64_t m = (*multiples)[i];
    if (m < 0) {
      return context.Error("multiples [", StrJoin(*multiples, ","), "] has a negative entry");
    }
    int64_t d = in.rank_known() ? in.dim(i) : PartialShape::kUnknownDim;
    if (m == 0) {
      dims[i] = 0;
    } else if (d >= 0 && __builtin_mul_overflow(d, m, &dims[i])) {
      return context.Error("tiling ", in.DebugString(), " by [", StrJoin(*multiples, ","),
                           "] overflows");
    }
  }
  if (PartialShape(dims).IsFullyDefined()) {
    StatusOr<TensorShape> shape = TensorShape::Create(dims);
    if (!shape.ok()) return context.Error("tiled shape is too large: ", shape.status().message());
  }
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

}  // namespace

void RegisterArrayTransformOps(OpRegistry& registry) {
  std::string data_types = StrCat("T: ", kDataTypes);
  registry.RegisterOrDie(
      OpDefBuilder("Transpose")
          .Input("x: T")
          .Input("perm: Tperm")
          .HostMemory("perm")
          .Output("y: T")
          .Attr(data_types)
          .Attr("Tperm: {int32, int64} = int32")
          .SetShapeFn(TransposeShape)
          .Doc("Permutes the dimensions of `x`: y.shape[i] = x.shape[perm[i]]."));
  registry.RegisterOrDie(OpDefBuilder("ConcatV2")
                             .Input("values: N * T")
                             .Input("axis: Tidx")
                             .HostMemory("axis")
                             .Output("output: T")
                             .Attr("N: int >= 2")
                             .Attr(data_types)
                             .Attr("Tidx: {int32, int64} = int32")
                             .SetShapeFn(ConcatShape)
                             .Doc("Joins `values` along `axis` (negative counts from the end)."));
  registry.RegisterOrDie(
      OpDefBuilder("Slice")
          .Input("input: T")
          .Input("begin: Index")
          .Input("size: Index")
          .HostMemory("begin")
          .HostMemory("size")
          .Output("output: T")
          .Attr(data_types)
          .Attr("Index: {int32, int64}")
          .SetShapeFn(SliceShape)
          .Doc("The block of `input` at `begin` of extent `size` (-1: to the end)."));
  registry.RegisterOrDie(OpDefBuilder("BroadcastTo")
                             .Input("input: T")
                             .Input("shape: Tidx")
                             .HostMemory("shape")
                             .Output("output: T")
                             .Attr(data_types)
                             .Attr("Tidx: {int32, int64} = int32")
                             .SetShapeFn(BroadcastToShape)
                             .Doc("Broadcasts `input` to `shape` with NumPy rules."));
  registry.RegisterOrDie(OpDefBuilder("Tile")
                             .Input("input: T")
                             .Input("multiples: Tmultiples")
                             .HostMemory("multiples")
                             .Output("output: T")
                             .Attr(data_types)
                             .Attr("Tmultiples: {int32, int64} = int32")
                             .SetShapeFn(TileShape)
                             .Doc("Repeats `input` multiples[i] times along dimension i."));
}

}  // namespace weft::ops
