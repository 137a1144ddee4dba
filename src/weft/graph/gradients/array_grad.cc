// Gradient functions of the array ops: the reshaping ops (the gradient is reshaped back to the
// input's shape), Transpose (by the inverse permutation), ConcatV2 (a Slice per input), Slice
// (padded back with zeros: Weft has no Pad op, so the zeros are joined on with ConcatV2 one dim at
// a time), Tile and BroadcastTo (summed over the copies), Fill (the sum of the gradient),
// GatherV2 and UnsortedSegmentSum (each through the other), and MatrixBandPart (the same band of
// the gradient). Constants, placeholders, shape metadata, variable reads and random draws block
// gradients.
//
// Index inputs (perm, axis, begin, multiples) are used as constants when they are Consts, and
// otherwise computed in the graph; either way the rank of the data must be known when the
// gradient is built.
#include "weft/graph/gradients/gradients.h"
#include "weft/graph/gradients/internal/grad_helpers.h"

namespace weft {
namespace {

using internal::AxisMask;
using internal::ConstantInts;
using internal::InputOf;
using internal::IntVector;
using internal::ScalarOf;
using internal::ShapeOf;
using internal::SumToShapeOf;
using internal::ToInt32;

using Grads = std::vector<Output>;

// The rank of `t`, or Unimplemented naming the op whose gradient needs it.
StatusOr<int> KnownRank(const Node* op, const Output& t) {
  if (t.shape().rank_known()) return t.shape().rank();
  return Unimplemented("the gradient of ", op->type_string(), " needs the rank of '", t.name(),
                       "', which is unknown when the graph is built");
}

// An int32 vector of `rank` zeros with `value` at `axis`.
Output OneHot(const Scope& scope, int rank, int64_t axis, int64_t value) {
  std::vector<int64_t> values(rank, 0);
  values[axis] = value;
  return IntVector(scope, values);
}

Status IdentityGrad(const Scope&, Node*, const Grads& dz, Grads* dx) {
  *dx = {dz[0]};
  return Status::OK();
}

// Reshape, ExpandDims and Squeeze keep the elements in order: reshape the gradient back.
Status ReshapeBackGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output input = InputOf(op, 0);
  dx->assign(op->num_inputs(), Output());
  (*dx)[0] = ops::Reshape(scope, dz[0], ShapeOf(scope, input));
  return scope.status();
}

// y = transpose(x, perm): dx = transpose(dy, inverse(perm)).
Status TransposeGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output perm = InputOf(op, 1);
  Output inverse;
  if (std::optional<std::vector<int64_t>> values = ConstantInts(perm)) {
    std::vector<int64_t> inv(values->size());
    for (size_t i = 0; i < values->size(); ++i) inv[(*values)[i]] = static_cast<int64_t>(i);
    inverse = IntVector(scope, inv);
  } else {
    WEFT_ASSIGN_OR_RETURN(int rank, KnownRank(op, InputOf(op, 0)));
    std::vector<int32_t> iota(rank);
    for (int i = 0; i < rank; ++i) iota[i] = i;
    // hit[i, j] = (perm[i] == j); inverse[j] = sum_i i * hit[i, j].
    Output column = ops::Reshape(scope, ToInt32(scope, perm), IntVector(scope, {rank, 1}));
    Output hit =
        ops::Cast(scope,
                  ops::Equal(scope, column,
                             ops::Const(scope, Tensor::FromVector(iota, TensorShape({1, rank})))),
                  DataType::kInt32);
    Output rows = ops::Const(scope, Tensor::FromVector(iota, TensorShape({rank, 1})));
    inverse = ops::Sum(scope, ops::Mul(scope, hit, rows), IntVector(scope, {0}));
  }
  *dx = {ops::Transpose(scope, dz[0], inverse), Output()};
  return scope.status();
}

// Each input gets the slice of the gradient at its offset along the axis. Offsets are constants
// while the sizes along the axis are known, and computed from Shape nodes from there on.
Status ConcatGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  const int n = op->num_inputs() - 1;
  Output axis = InputOf(op, n);
  WEFT_ASSIGN_OR_RETURN(int rank, KnownRank(op, Output(op, 0)));
  std::optional<int64_t> static_axis;
  if (std::optional<std::vector<int64_t>> values = ConstantInts(axis)) {
    static_axis = (*values)[0] < 0 ? (*values)[0] + rank : (*values)[0];
  }
  std::optional<int64_t> static_offset;
  if (static_axis) static_offset = 0;
  Output mask, offset;  // dynamic: the axis as a one-hot mask, and the begin of the next input
  dx->assign(n + 1, Output());
  for (int i = 0; i < n; ++i) {
    Output x = InputOf(op, i);
    Output begin = static_offset ? OneHot(scope, rank, *static_axis, *static_offset) : offset;
    if (!begin) begin = IntVector(scope, std::vector<int64_t>(rank, 0));
    (*dx)[i] = ops::Slice(scope, dz[0], begin, ShapeOf(scope, x));
    if (i == n - 1) break;
    const PartialShape shape = x.shape();
    if (static_offset && shape.rank_known() && shape.dim(static_cast<int>(*static_axis)) >= 0) {
      *static_offset += shape.dim(static_cast<int>(*static_axis));
      continue;
    }
    if (!mask) mask = AxisMask(scope, axis, rank);
    offset = ops::Add(scope, begin, ops::Mul(scope, ShapeOf(scope, x), mask));
    static_offset.reset();
  }
  return scope.status();
}

// The gradient of a slice, padded with zeros back to the input's shape: for each dim, zeros for
// the `before` elements and the `after` elements are joined on either side with ConcatV2. With
// constant begin and known shapes, dims without padding are skipped and all shapes are Consts.
Status SliceGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output input = InputOf(op, 0), begin = InputOf(op, 1), output(op, 0);
  WEFT_ASSIGN_OR_RETURN(int rank, KnownRank(op, input));
  Output zero;  // the fill value, built once when first needed
  auto zeros = [&](const Output& shape) {
    if (!zero) zero = ops::Const(scope, ScalarOf(input.dtype(), 0));
    return ops::Fill(scope, shape, zero);
  };
  const PartialShape in_shape = input.shape(), out_shape = output.shape();
  std::optional<std::vector<int64_t>> begin_values = ConstantInts(begin);
  const bool is_static = begin_values && in_shape.IsFullyDefined() && out_shape.IsFullyDefined();
  Output before, after;  // dynamic: int32 [rank] vectors
  if (!is_static) {
    before = ToInt32(scope, begin);
    after = ops::Sub(scope, ops::Sub(scope, ShapeOf(scope, input), before), ShapeOf(scope, output));
  }
  std::vector<int64_t> dims = out_shape.dims();  // static: the shape of `padded` so far
  Output padded = dz[0];
  for (int d = 0; d < rank; ++d) {
    std::vector<Output> parts;
    if (is_static) {
      const int64_t pad_before = (*begin_values)[d];
      const int64_t pad_after = in_shape.dim(d) - pad_before - out_shape.dim(d);
      if (pad_before == 0 && pad_after == 0) continue;
      std::vector<int64_t> zeros_dims = dims;
      if (pad_before > 0) {
        zeros_dims[d] = pad_before;
        parts.push_back(zeros(IntVector(scope, zeros_dims)));
      }
      parts.push_back(padded);
      if (pad_after > 0) {
        zeros_dims[d] = pad_after;
        parts.push_back(zeros(IntVector(scope, zeros_dims)));
      }
      dims[d] = in_shape.dim(d);
    } else {
      Output mask = OneHot(scope, rank, d, 1);
      Output shape = ops::Shape(scope, padded);
      Output others = ops::Sub(scope, shape, ops::Mul(scope, shape, mask));  // 0 at d
      parts = {zeros(ops::Add(scope, others, ops::Mul(scope, before, mask))), padded,
               zeros(ops::Add(scope, others, ops::Mul(scope, after, mask)))};
    }
    padded = ops::Concat(scope, parts, d);
  }
  // The dynamic padding loses the static shape; the input's (a variable's, often) is the answer's,
  // and a reshape to it costs no copy.
  if (!is_static) padded = ops::Reshape(scope, padded, ShapeOf(scope, input));
  *dx = {padded, Output(), Output()};
  return scope.status();
}

// tile(x, m) viewed as [m0, d0, m1, d1, ...]: summing over the m axes gives x's gradient.
Status TileGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output input = InputOf(op, 0), multiples = InputOf(op, 1);
  WEFT_ASSIGN_OR_RETURN(int rank, KnownRank(op, input));
  if (rank == 0) {
    *dx = {dz[0], Output()};
    return Status::OK();
  }
  Output split_shape;
  std::optional<std::vector<int64_t>> m = ConstantInts(multiples);
  if (m && input.shape().IsFullyDefined()) {
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) {
      dims.push_back((*m)[i]);
      dims.push_back(input.shape().dim(i));
    }
    split_shape = IntVector(scope, dims);
  } else {
    Output column_shape = IntVector(scope, {-1, 1});
    Output pairs = ops::Concat(scope,
                               {ops::Reshape(scope, ToInt32(scope, multiples), column_shape),
                                ops::Reshape(scope, ShapeOf(scope, input), column_shape)},
                               1);
    split_shape = ops::Reshape(scope, pairs, IntVector(scope, {-1}));
  }
  std::vector<int64_t> axes;
  for (int i = 0; i < rank; ++i) axes.push_back(2 * i);
  *dx = {ops::Sum(scope, ops::Reshape(scope, dz[0], split_shape), IntVector(scope, axes)),
         Output()};
  return scope.status();
}

Status BroadcastToGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {SumToShapeOf(scope, dz[0], InputOf(op, 0)), Output()};
  return scope.status();
}

// Every output element is the value: its gradient is the sum of the output's gradient.
Status FillGrad(const Scope& scope, Node*, const Grads& dz, Grads* dx) {
  Output flat = ops::Reshape(scope, dz[0], IntVector(scope, {-1}));
  *dx = {Output(), ops::Sum(scope, flat, 0)};
  return scope.status();
}

// Dim `axis` of `t`'s shape as an int32 scalar: a Const when the graph knows it.
Output DimOf(const Scope& scope, const Output& t, int64_t axis) {
  const PartialShape shape = t.shape();
  if (shape.rank_known() && shape.dim(static_cast<int>(axis)) >= 0) {
    return ops::Const(scope, Tensor::Scalar<int32_t>(static_cast<int32_t>(shape.dim(axis))));
  }
  Output dim =
      ops::Slice(scope, ops::Shape(scope, t), IntVector(scope, {axis}), IntVector(scope, {1}));
  return ops::Reshape(scope, dim, IntVector(scope, {}));
}

// output = gather(params, indices, axis) has shape outer + indices.shape + inner. Dense, with no
// IndexedSlices: view the gradient as outer + [n] + inner (n = size(indices)), move the n axis to
// the front, add each slice into the params row its index names (UnsortedSegmentSum, whose result
// then has params' shape) and move the axis back. Indices and axis get no gradient; the axis must
// be a Const, and for a nonzero axis the rank of params must be known.
Status GatherV2Grad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output params = InputOf(op, 0), indices = InputOf(op, 1), axis_input = InputOf(op, 2);
  std::optional<std::vector<int64_t>> axis_values = ConstantInts(axis_input);
  if (!axis_values || axis_values->size() != 1) {
    return Unimplemented("the gradient of GatherV2 needs a constant axis, but '", axis_input.name(),
                         "' is not a Const");
  }
  int64_t axis = (*axis_values)[0];
  int rank = -1;  // needed only to move a nonzero axis
  if (axis != 0) {
    WEFT_ASSIGN_OR_RETURN(rank, KnownRank(op, params));
    if (axis < 0) axis += rank;
  }
  const PartialShape params_shape = params.shape(), indices_shape = indices.shape();
  Output values_shape;
  if (params_shape.IsFullyDefined() && indices_shape.IsFullyDefined()) {
    std::vector<int64_t> dims = params_shape.dims();
    dims[axis] = indices_shape.num_elements();
    values_shape = IntVector(scope, dims);
  } else {
    Output shape = ops::Shape(scope, params);
    std::vector<Output> parts;
    if (axis > 0) parts.push_back(ops::Slice(scope, shape, {0}, IntVector(scope, {axis})));
    parts.push_back(ops::Reshape(scope, ops::Size(scope, indices), IntVector(scope, {1})));
    parts.push_back(ops::Slice(scope, shape, IntVector(scope, {axis + 1}), {-1}));
    values_shape = ops::Concat(scope, parts, 0);
  }
  Output values = ops::Reshape(scope, dz[0], values_shape);
  Output flat_indices = ops::Reshape(scope, indices, IntVector(scope, {-1}));
  Output num_segments = DimOf(scope, params, axis);
  if (axis == 0) {
    *dx = {ops::UnsortedSegmentSum(scope, values, flat_indices, num_segments), Output(), Output()};
    return scope.status();
  }
  // to_front moves the gathered axis first: [axis, 0, .., axis-1, axis+1, ..]; to_back undoes it.
  std::vector<int64_t> to_front = {axis}, to_back;
  for (int i = 0; i < rank; ++i) {
    if (i != axis) to_front.push_back(i);
    to_back.push_back(i < axis ? i + 1 : (i == axis ? 0 : i));
  }
  Output summed = ops::UnsortedSegmentSum(
      scope, ops::Transpose(scope, values, IntVector(scope, to_front)), flat_indices, num_segments);
  *dx = {ops::Transpose(scope, summed, IntVector(scope, to_back)), Output(), Output()};
  return scope.status();
}

// Each data slice was added into the segment its id names: its gradient is that segment's
// gradient, gathered back. A negative id dropped its slice, so that slice gets zeros: gathered at
// the clipped id 0, then replaced by selecting zeros (as in the reference system). With
// num_segments 0 there is no segment 0 to gather: the step fails with GatherV2's InvalidArgument.
Status UnsortedSegmentSumGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output data = InputOf(op, 0), ids = InputOf(op, 1);
  Output zero_id = ops::Const(scope, ScalarOf(ids.dtype(), 0));
  Output gathered = ops::GatherV2(scope, dz[0], ops::Maximum(scope, ids, zero_id), 0);
  Output kept = ops::GreaterEqual(scope, ids, zero_id);
  // kept has the shape of ids, a prefix of gathered's: append 1s so that it broadcasts.
  const int data_rank = data.shape().rank(), ids_rank = ids.shape().rank();
  if (data_rank < 0 || ids_rank < 0) {
    Output extra =
        ops::Reshape(scope, ops::Sub(scope, ops::Rank(scope, data), ops::Rank(scope, ids)),
                     IntVector(scope, {1}));
    Output ones = ops::Fill(scope, extra, 1);
    kept = ops::Reshape(scope, kept, ops::Concat(scope, {ops::Shape(scope, ids), ones}, 0));
  } else if (data_rank > ids_rank) {
    Output ones = IntVector(scope, std::vector<int64_t>(data_rank - ids_rank, 1));
    kept = ops::Reshape(scope, kept, ops::Concat(scope, {ShapeOf(scope, ids), ones}, 0));
  }
  Output zero = ops::Const(scope, ScalarOf(dz[0].dtype(), 0));
  *dx = {ops::SelectV2(scope, kept, gathered, zero), Output(), Output()};
  return scope.status();
}

// Each data input's gradient is the rows of dz its indices name (an index named twice sends its
// gradient to both rows, as in the reference: stitch indices are meant to be distinct).
Status DynamicStitchGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  const int n = op->num_inputs() / 2;
  dx->assign(op->num_inputs(), Output());
  for (int m = 0; m < n; ++m) (*dx)[n + m] = ops::GatherV2(scope, dz[0], InputOf(op, m), 0);
  return scope.status();
}

// The rows' gradients stitched back to where their rows came from: the positions of data's rows,
// partitioned the same way, say where.
Status DynamicPartitionGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output data = InputOf(op, 0), partitions = InputOf(op, 1);
  Output positions = ops::Reshape(scope, ops::Range(scope, 0, ops::Size(scope, partitions), 1),
                                  ops::Shape(scope, partitions));
  std::vector<Output> where =
      ops::DynamicPartition(scope, positions, partitions, op->num_outputs());
  std::vector<Output> grads;
  for (int i = 0; i < op->num_outputs(); ++i) {
    grads.push_back(dz[i] ? dz[i] : ops::ZerosLike(scope, Output(op, i)));
  }
  Output stitched = ops::DynamicStitch(scope, where, grads);
  *dx = {ops::Reshape(scope, stitched, ops::Shape(scope, data)), Output()};
  return scope.status();
}

// Only the band reached the output, so only the band of dz flows back (the reference's
// _MatrixBandPartGrad). The band counts get none.
Status MatrixBandPartGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {ops::MatrixBandPart(scope, dz[0], InputOf(op, 1), InputOf(op, 2)), Output(), Output()};
  return scope.status();
}

}  // namespace

void RegisterArrayGradients(GradientRegistry& registry) {
  registry.Register("Identity", IdentityGrad);
  registry.Register("Reshape", ReshapeBackGrad);
  registry.Register("ExpandDims", ReshapeBackGrad);
  registry.Register("Squeeze", ReshapeBackGrad);
  registry.Register("Transpose", TransposeGrad);
  registry.Register("ConcatV2", ConcatGrad);
  registry.Register("Slice", SliceGrad);
  registry.Register("Tile", TileGrad);
  registry.Register("BroadcastTo", BroadcastToGrad);
  registry.Register("Fill", FillGrad);
  registry.Register("GatherV2", GatherV2Grad);
  registry.Register("UnsortedSegmentSum", UnsortedSegmentSumGrad);
  registry.Register("DynamicStitch", DynamicStitchGrad);
  registry.Register("DynamicPartition", DynamicPartitionGrad);
  registry.Register("MatrixBandPart", MatrixBandPartGrad);
  // Nothing flows into a resource: a variable's gradient is that of its read's output.
  for (const char* op :
       {"Const", "Placeholder", "StopGradient", "NoOp", "Shape", "Size", "Rank", "Range",
        "ZerosLike", "OnesLike", "_Arg", "_Retval", "VarHandleOp", "ReadVariableOp",
        "VarIsInitializedOp", "RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    registry.RegisterNoGradient(op);
  }
  // The same for the rows of a variable: their gradient is that of ResourceGather's output, which
  // the optimizer applies sparsely (ResourceSparseApply*) with the gather's indices.
  registry.RegisterNoGradient("ResourceGather");
  // A checkpoint's values come from a file, not from the graph.
  registry.RegisterNoGradient("RestoreV2");
  // A per-worker dataset's next element: data, not a function of anything to train.
  registry.RegisterNoGradient("IteratorGetNext");
}

}  // namespace weft
