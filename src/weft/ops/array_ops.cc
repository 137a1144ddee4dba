// Array ops, part 1: constants, placeholders, identities and shape metadata (Const, Placeholder,
// Identity, StopGradient, NoOp, Shape, Size, Rank, Reshape, ExpandDims, Squeeze) and the fills
// (Fill, ZerosLike, OnesLike). Ops that move elements around (Transpose, ConcatV2, Slice,
// BroadcastTo, Tile) are in array_transform_ops.cc, the indexing ops (GatherV2,
// UnsortedSegmentSum) in gather_ops.cc, the ops on innermost matrices (MatrixBandPart) in
// matrix_ops.cc. Shape functions read constant shape inputs (context.input_tensor) so that, e.g.,
// Reshape of a [?,28,28,1] placeholder to [-1,784] infers [?,784].
#include <algorithm>

#include "weft/framework/node_def_util.h"
#include "weft/framework/shape_inference.h"
#include "weft/framework/tensor_proto_util.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {

void RegisterArrayTransformOps(OpRegistry& registry);  // array_transform_ops.cc
void RegisterGatherOps(OpRegistry& registry);          // gather_ops.cc
void RegisterPartitionOps(OpRegistry& registry);       // partition_ops.cc
void RegisterMatrixOps(OpRegistry& registry);          // matrix_ops.cc: MatrixBandPart

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

// Output 0 has rank `rank` (unknown dims), or unknown rank when `rank` < 0.
void SetUnknownOfRank(InferenceContext& context, int64_t rank) {
  context.set_output(0, rank >= 0 ? PartialShape::UnknownOfRank(static_cast<int>(rank))
                                  : PartialShape::UnknownRank());
}

// The length of vector input `i` when known, else -1.
int64_t VectorLength(const InferenceContext& context, int i) {
  const PartialShape& shape = context.input(i);
  return shape.rank() == 1 ? shape.dim(0) : -1;
}

Status ConstShape(InferenceContext& context) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* value, FindNodeAttr(context.node_def(), "value"));
  DataType dtype;
  WEFT_RETURN_IF_ERROR(context.GetAttr("dtype", &dtype));
  DataType value_type = static_cast<DataType>(value->tensor().dtype());
  if (value_type != dtype) {
    return context.Error("value is a ", DataTypeName(value_type), " tensor, but dtype is ",
                         DataTypeName(dtype));
  }
  StatusOr<TensorShape> shape = TensorShapeFromProto(value->tensor().tensor_shape());
  if (!shape.ok()) return context.Error("bad value: ", shape.status().message());
  context.set_output(0, PartialShape(*shape));
  return Status::OK();
}

Status ShapeOfShape(InferenceContext& context) {
  context.set_output(0, PartialShape({context.input(0).rank()}));  // rank() is -1 when unknown
  return Status::OK();
}

// Reshape: at most one -1 in the requested shape, inferred from the element count when that is
// known; the element counts must match.
Status ReshapeShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 1));
  const Tensor* sizes = context.input_tensor(1);
  if (sizes == nullptr) {
    // Reshape(g, Shape(x)), as the gradients of broadcasting ops build it, has x's known dims.
    PartialShape as_shape = context.input_tensor_as_shape(1);
    if (as_shape.rank_known()) {
      context.set_output(0, std::move(as_shape));
    } else {
      SetUnknownOfRank(context, VectorLength(context, 1));
    }
    return Status::OK();
  }
  std::vector<int64_t> dims = IndexValues(*sizes);
  const PartialShape& in = context.input(0);
  auto mismatch = [&] {
    return context.Error("cannot reshape a tensor of shape ", in.DebugString(), " into shape [",
                         StrJoin(dims, ","), "]");
  };
  int unknown = -1;
  std::vector<int64_t> known(dims);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (unknown >= 0)
        return context.Error("only one dimension of [", StrJoin(dims, ","), "] may be -1");
      unknown = static_cast<int>(i);
      known[i] = 1;
    } else if (dims[i] < 0) {
      return context.Error("dimension ", i, " of requested shape [", StrJoin(dims, ","),
                           "] is negative");
    }
  }
  StatusOr<TensorShape> known_shape = TensorShape::Create(known);
  if (!known_shape.ok()) return mismatch();
  int64_t product = known_shape->num_elements();
  int64_t in_elements = in.num_elements();
  if (in_elements >= 0) {
    if (unknown >= 0) {
      if (product == 0 || in_elements % product != 0) return mismatch();
      dims[unknown] = in_elements / product;
    } else if (product != in_elements) {
      return mismatch();
    }
  } else if (unknown < 0 && in.rank_known()) {
    // The input's elements are a multiple of its known dims' product; so must the output's be.
    int64_t in_known = 1;
    for (int64_t d : in.dims()) in_known *= d >= 0 ? d : 1;
    if (in_known > 0 && product % in_known != 0) return mismatch();
  }
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

Status ExpandDimsShape(InferenceContext& context) {
  const PartialShape& in = context.input(0);
  const Tensor* dim = context.input_tensor(1);
  if (!in.rank_known() || dim == nullptr) {
    SetUnknownOfRank(context, in.rank_known() ? in.rank() + 1 : -1);
    return Status::OK();
  }
  if (dim->NumElements() != 1) {
    return context.Error("dim must hold one value, but has shape ", dim->shape());
  }
  int64_t d = IndexValues(*dim)[0];
  int rank = in.rank();
  if (d < -rank - 1 || d > rank) {
    return context.Error("dim ", d, " is out of range [", -rank - 1, ", ", rank, "] for shape ",
                         in.DebugString());
  }
  if (d < 0) d += rank + 1;
  std::vector<int64_t> dims = in.dims();
  dims.insert(dims.begin() + d, 1);
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

Status SqueezeShape(InferenceContext& context) {
  const PartialShape& in = context.input(0);
  std::vector<int64_t> squeeze;
  WEFT_RETURN_IF_ERROR(context.GetAttr("squeeze_dims", &squeeze));
  if (!in.rank_known()) {
    context.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  int rank = in.rank();
  std::vector<bool> drop(rank, false);
  if (squeeze.empty()) {
    for (int i = 0; i < rank; ++i) {
      if (in.dim(i) < 0) {  // might be 1: the output rank is unknown
        context.set_output(0, PartialShape::UnknownRank());
        return Status::OK();
      }
      drop[i] = in.dim(i) == 1;
    }
  }
  for (int64_t d : squeeze) {
    if (d < -rank || d >= rank) {
      return context.Error("squeeze dimension ", d, " is out of range [", -rank, ", ", rank,
                           ") for shape ", in.DebugString());
    }
    if (d < 0) d += rank;
    if (in.dim(d) >= 0 && in.dim(d) != 1) {
      return context.Error("cannot squeeze dimension ", d, " of shape ", in.DebugString(),
                           ": its size is not 1");
    }
    drop[d] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (!drop[i]) dims.push_back(in.dim(i));
  }
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

Status FillShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 0));
  return context.SetOutputFromShapeInput(0, 0);
}

void RegisterMetadataOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("Const")
                             .Output("output: dtype")
                             .Attr("value: tensor")
                             .Attr("dtype: type")
                             .SetShapeFn(ConstShape)
                             .Doc("A constant tensor, the `value` attr."));
  // Stateful so that two placeholders with equal attrs are never merged into one.
  registry.RegisterOrDie(OpDefBuilder("Placeholder")
                             .Output("output: dtype")
                             .Attr("dtype: type")
                             .Attr("shape: shape = unknown")
                             .SetIsStateful()
                             .SetShapeFn(shape_fn::ShapeFromShapeAttr)
                             .Doc("A value that must be fed when the step runs."));
  registry.RegisterOrDie(OpDefBuilder("Identity")
                             .Input("input: T")
                             .Output("output: T")
                             .Attr("T: type")
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("Returns its input unchanged (the same buffer)."));
  registry.RegisterOrDie(OpDefBuilder("StopGradient")
                             .Input("input: T")
                             .Output("output: T")
                             .Attr("T: type")
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("Identity that blocks gradients from flowing to its input."));
  registry.RegisterOrDie(OpDefBuilder("NoOp")
                             .SetShapeFn(shape_fn::UnknownShape)
                             .Doc("Does nothing; a target for control dependencies."));
  registry.RegisterOrDie(OpDefBuilder("Shape")
                             .Input("input: T")
                             .Output("output: out_type")
                             .HostMemory("output")
                             .Attr("T: type")
                             .Attr("out_type: {int32, int64} = int32")
                             .SetShapeFn(ShapeOfShape)
                             .Doc("The shape of `input` as a 1-D tensor."));
  registry.RegisterOrDie(OpDefBuilder("Size")
                             .Input("input: T")
                             .Output("output: out_type")
                             .HostMemory("output")
                             .Attr("T: type")
                             .Attr("out_type: {int32, int64} = int32")
                             .SetShapeFn(shape_fn::ScalarShape)
                             .Doc("The number of elements of `input`."));
  registry.RegisterOrDie(OpDefBuilder("Rank")
                             .Input("input: T")
                             .Output("output: int32")
                             .HostMemory("output")
                             .Attr("T: type")
                             .SetShapeFn(shape_fn::ScalarShape)
                             .Doc("The number of dimensions of `input`."));
}

void RegisterReshapingOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("Reshape")
                             .Input("tensor: T")
                             .Input("shape: Tshape")
                             .HostMemory("shape")
                             .Output("output: T")
                             .Attr("T: type")
                             .Attr("Tshape: {int32, int64} = int32")
                             .SetShapeFn(ReshapeShape)
                             .Doc("`tensor` with shape `shape` (one -1 inferred); no copy."));
  registry.RegisterOrDie(OpDefBuilder("ExpandDims")
                             .Input("input: T")
                             .Input("dim: Tdim")
                             .HostMemory("dim")
                             .Output("output: T")
                             .Attr("T: type")
                             .Attr("Tdim: {int32, int64} = int32")
                             .SetShapeFn(ExpandDimsShape)
                             .Doc("Inserts a dimension of size 1 at index `dim`; no copy."));
  registry.RegisterOrDie(
      OpDefBuilder("Squeeze")
          .Input("input: T")
          .Output("output: T")
          .Attr("T: type")
          .Attr("squeeze_dims: list(int) = []")
          .SetShapeFn(SqueezeShape)
          .Doc("Removes dimensions of size 1 (all, or `squeeze_dims`); no copy."));
}

void RegisterFillOps(OpRegistry& registry) {
  std::string data_types = StrCat("T: ", kDataTypes);
  registry.RegisterOrDie(OpDefBuilder("Fill")
                             .Input("dims: index_type")
                             .HostMemory("dims")
                             .Input("value: T")
                             .Output("output: T")
                             .Attr(data_types)
                             .Attr("index_type: {int32, int64} = int32")
                             .SetShapeFn(FillShape)
                             .Doc("A tensor of shape `dims` filled with the scalar `value`."));
  registry.RegisterOrDie(OpDefBuilder("ZerosLike")
                             .Input("x: T")
                             .Output("y: T")
                             .Attr(data_types)
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("Zeros of the shape and type of `x`."));
  registry.RegisterOrDie(OpDefBuilder("OnesLike")
                             .Input("x: T")
                             .Output("y: T")
                             .Attr(data_types)
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("Ones of the shape and type of `x`."));
}

}  // namespace

void RegisterArrayOps(OpRegistry& registry) {
  RegisterMetadataOps(registry);
  RegisterReshapingOps(registry);
  RegisterFillOps(registry);
  RegisterArrayTransformOps(registry);
  RegisterGatherOps(registry);
  RegisterPartitionOps(registry);
  RegisterMatrixOps(registry);
}

}  // namespace weft::ops
