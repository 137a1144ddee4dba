#include "weft/framework/shape_inference.h"

#include "weft/framework/node_def_util.h"

namespace weft {

InferenceContext::InferenceContext(const proto::NodeDef& node, const OpDef& op,
                                   std::vector<PartialShape> input_shapes,
                                   std::vector<const Tensor*> input_tensors, int num_outputs)
    : node_(node),
      op_(op),
      inputs_(std::move(input_shapes)),
      input_tensors_(std::move(input_tensors)),
      outputs_(num_outputs) {}

std::string InferenceContext::NodePrefix() const { return StrCat(FormatNodeForError(node_), ": "); }

std::optional<std::vector<int64_t>> InferenceContext::ConstantIntVector(int i) const {
  const Tensor* t = input_tensor(i);
  if (t == nullptr) return std::nullopt;
  std::vector<int64_t> values;
  if (t->dtype() == DataType::kInt32) {
    for (int32_t v : t->flat<int32_t>()) values.push_back(v);
  } else if (t->dtype() == DataType::kInt64) {
    for (int64_t v : t->flat<int64_t>()) values.push_back(v);
  } else {
    return std::nullopt;
  }
  return values;
}

Status InferenceContext::SetOutputFromShapeInput(int output, int input) {
  WEFT_RETURN_IF_ERROR(WithRank(input, 1));
  std::optional<std::vector<int64_t>> dims = ConstantIntVector(input);
  if (!dims.has_value()) {
    PartialShape as_shape = input_tensor_as_shape(input);
    if (as_shape.rank_known()) {
      set_output(output, std::move(as_shape));
      return Status::OK();
    }
    const PartialShape& shape = inputs_[input];
    int64_t rank = shape.rank() == 1 ? shape.dim(0) : -1;
    set_output(output, rank >= 0 ? PartialShape::UnknownOfRank(static_cast<int>(rank))
                                 : PartialShape::UnknownRank());
    return Status::OK();
  }
  StatusOr<TensorShape> shape = TensorShape::Create(*dims);
  if (!shape.ok()) {
    return Error("bad shape [", StrJoin(*dims, ","), "]: ", shape.status().message());
  }
  set_output(output, PartialShape(*shape));
  return Status::OK();
}

Status InferenceContext::WithRank(int i, int rank) const {
  const PartialShape& shape = inputs_[i];
  if (shape.rank_known() && shape.rank() != rank) {
    return Error("input ", i, " must have rank ", rank, ", but has shape ", shape.DebugString());
  }
  return Status::OK();
}

Status InferenceContext::WithRankAtLeast(int i, int rank) const {
  const PartialShape& shape = inputs_[i];
  if (shape.rank_known() && shape.rank() < rank) {
    return Error("input ", i, " must have rank at least ", rank, ", but has shape ",
                 shape.DebugString());
  }
  return Status::OK();
}

Status InferenceContext::CheckDimsEqual(int64_t a, int64_t b, std::string_view what) const {
  if (a >= 0 && b >= 0 && a != b) {
    return Error(what, " must be equal, but are ", a, " and ", b);
  }
  return Status::OK();
}

StatusOr<PartialShape> BroadcastShapes(const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known() || !b.rank_known()) return PartialShape::UnknownRank();
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a.dim(ia) : 1;
    int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da == 1) {
      dims[i] = db;
    } else if (db == 1) {
      dims[i] = da;
    } else if (da < 0 || db < 0) {
      dims[i] = da < 0 ? db : da;  // one unknown, the other not 1: it must be that one
    } else if (da != db) {
      return InvalidArgument("shapes ", a.DebugString(), " and ", b.DebugString(),
                             " cannot be broadcast together (dimension ", da, " vs ", db, ")");
    } else {
      dims[i] = da;
    }
  }
  return PartialShape(std::move(dims));
}

namespace shape_fn {

Status UnchangedShape(InferenceContext& context) {
  context.set_output(0, context.input(0));
  return Status::OK();
}

Status ShapeFromShapeAttr(InferenceContext& context) {
  PartialShape shape;
  WEFT_RETURN_IF_ERROR(context.GetAttr("shape", &shape));
  context.set_output(0, shape);
  return Status::OK();
}

Status ScalarShape(InferenceContext& context) {
  for (int i = 0; i < context.num_outputs(); ++i) context.set_output(i, PartialShape({}));
  return Status::OK();
}

Status UnknownShape(InferenceContext& context) {
  for (int i = 0; i < context.num_outputs(); ++i) context.set_output(i, PartialShape());
  return Status::OK();
}

Status BroadcastBinaryOp(InferenceContext& context) {
  StatusOr<PartialShape> shape = BroadcastShapes(context.input(0), context.input(1));
  if (!shape.ok()) return context.Error(shape.status().message());
  context.set_output(0, *shape);
  return Status::OK();
}

}  // namespace shape_fn
}  // namespace weft
