// Resource-variable ops: VarHandleOp names a variable living in its device's ResourceMgr;
// ReadVariableOp, ResourceGather (rows of it), AssignVariableOp, AssignAddVariableOp,
// AssignSubVariableOp, VarIsInitializedOp and DestroyResourceOp act on it through that handle. All
// are stateful: two reads of one variable are never merged. A read's shape is unknown here (shape
// functions see only the scalar handle). The _StageTensors family holds a step's update inputs on
// their device until the coordinator commits them (distribute/staged_updates.h).
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

constexpr char kAddableTypes[] = "dtype: {float32, float64, int32, int64}";

// Input 0 is a resource handle, which is a scalar.
Status HandleIsScalar(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(0, 0));
  return Status::OK();
}

Status AssignShape(InferenceContext& context) { return HandleIsScalar(context); }

Status ReadShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(HandleIsScalar(context));
  context.set_output(0, context.input_handle_shape(0));
  return Status::OK();
}

// indices.shape + the variable's shape without its first dimension.
Status GatherShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(HandleIsScalar(context));
  const PartialShape& indices = context.input(1);
  const PartialShape variable = context.input_handle_shape(0);
  if (!indices.rank_known() || !variable.rank_known()) {
    context.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  if (variable.rank() < 1) {
    return context.Error("cannot gather rows of a variable of shape ", variable.DebugString());
  }
  std::vector<int64_t> dims = indices.dims();
  dims.insert(dims.end(), variable.dims().begin() + 1, variable.dims().end());
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

Status CommitIdIsScalar(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(0, 0));
  return Status::OK();
}

Status IsInitializedShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(HandleIsScalar(context));
  context.set_output(0, PartialShape({}));
  return Status::OK();
}

// The steps' staged updates (distribute/staged_updates.h).
void RegisterStagingOps(OpRegistry& registry) {
  registry.RegisterOrDie(
      OpDefBuilder("_StageTensors")
          .Input("commit_id: int64")
          .Input("values: dtypes")
          .Attr("stage: string")
          .Attr("dtypes: list(type)")
          .SetIsStateful()
          .SetShapeFn(CommitIdIsScalar)
          .SetIsInternal()
          .Doc("Keeps `values` on this device under (`stage`, commit_id) until _UnstageTensors "
               "takes them or _DiscardStagedTensors drops them; staging the same key again "
               "replaces them."));
  registry.RegisterOrDie(
      OpDefBuilder("_UnstageTensors")
          .Input("commit_id: int64")
          .Output("values: dtypes")
          .Attr("stage: string")
          .Attr("dtypes: list(type)")
          .SetIsStateful()
          .SetShapeFn(CommitIdIsScalar)
          .SetIsInternal()
          .Doc("Takes (and removes) the values staged under (`stage`, commit_id): all of them, "
               "or, when none are staged, NotFound and nothing taken."));
  registry.RegisterOrDie(OpDefBuilder("_DiscardStagedTensors")
                             .Input("commit_id: int64")
                             .Attr("stage: string")
                             .SetIsStateful()
                             .SetShapeFn(CommitIdIsScalar)
                             .SetIsInternal()
                             .Doc("Drops the values staged under (`stage`, commit_id), if any."));
}

}  // namespace

void RegisterStateOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("VarHandleOp")
                             .Output("resource: resource")
                             .Attr("container: string = ''")
                             .Attr("shared_name: string = ''")
                             .Attr("dtype: type")
                             .Attr("shape: shape")
                             .SetIsStateful()
                             .SetShapeFn(shape_fn::ScalarShape)
                             .Doc("A handle to the variable `shared_name` (default: the node's "
                                  "name) in `container` on this node's device."));
  registry.RegisterOrDie(OpDefBuilder("ReadVariableOp")
                             .Input("resource: resource")
                             .Output("value: dtype")
                             .Attr("dtype: type")
                             .SetIsStateful()
                             .SetShapeFn(ReadShape)
                             .Doc("The current value of a variable (shares its buffer; later "
                                  "updates copy first)."));
  registry.RegisterOrDie(OpDefBuilder("ResourceGather")
                             .Input("resource: resource")
                             .Input("indices: Tindices")
                             .Output("output: dtype")
                             .Attr("dtype: type")
                             .Attr("Tindices: {int32, int64}")
                             .SetIsStateful()
                             .SetShapeFn(GatherShape)
                             .Doc("Rows `indices` of a variable (an embedding lookup), copied out: "
                                  "output shape indices.shape + variable.shape[1:]. An index "
                                  "outside the variable is an error naming it."));
  registry.RegisterOrDie(OpDefBuilder("AssignVariableOp")
                             .Input("resource: resource")
                             .Input("value: dtype")
                             .Attr("dtype: type")
                             .SetIsStateful()
                             .SetShapeFn(AssignShape)
                             .Doc("Sets a variable to `value`, initializing it."));
  registry.RegisterOrDie(OpDefBuilder("AssignAddVariableOp")
                             .Input("resource: resource")
                             .Input("value: dtype")
                             .Attr(kAddableTypes)
                             .SetIsStateful()
                             .SetShapeFn(AssignShape)
                             .Doc("Adds `value` to a variable in place."));
  registry.RegisterOrDie(OpDefBuilder("AssignSubVariableOp")
                             .Input("resource: resource")
                             .Input("value: dtype")
                             .Attr(kAddableTypes)
                             .SetIsStateful()
                             .SetShapeFn(AssignShape)
                             .Doc("Subtracts `value` from a variable in place."));
  registry.RegisterOrDie(OpDefBuilder("VarIsInitializedOp")
                             .Input("resource: resource")
                             .Output("is_initialized: bool")
                             .HostMemory("is_initialized")
                             .SetIsStateful()
                             .SetShapeFn(IsInitializedShape)
                             .Doc("Whether the variable exists and has been assigned a value."));
  registry.RegisterOrDie(OpDefBuilder("DestroyResourceOp")
                             .Input("resource: resource")
                             .Attr("ignore_lookup_error: bool = true")
                             .SetIsStateful()
                             .SetShapeFn(AssignShape)
                             .Doc("Deletes the resource; a missing one is an error only when "
                                  "`ignore_lookup_error` is false."));
  RegisterStagingOps(registry);
}

}  // namespace weft::ops
