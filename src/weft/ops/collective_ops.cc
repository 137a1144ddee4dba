// Collective ops, one node per member (one per device) of a collective; members of one collective
// share group_key and instance_key, and the step's CollectiveExecutor matches them:
// - CollectiveAllReduce: the all-reduce that MirroredStrategy puts on each replica's device to sum
//   (or average) its gradients with the other replicas'. One node reduces a bucket of N tensors in
//   one collective, so many small gradients share one rendezvous without being concatenated.
// - CollectiveBroadcastSend / CollectiveBroadcastRecv: one member sends its input, every other
//   member receives it (TensorFlow's CollectiveBcastSend / CollectiveBcastRecv): how a mirrored
//   variable's initial value reaches every replica.
// - CollectiveAllGather: every member's input concatenated along dimension 0 in member order
//   (TensorFlow's CollectiveGather).
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

// A group needs at least one member.
Status CheckGroupSize(InferenceContext& context, int64_t* group_size) {
  WEFT_RETURN_IF_ERROR(context.GetAttr("group_size", group_size));
  if (*group_size < 1) return context.Error("group_size must be at least 1, got ", *group_size);
  return Status::OK();
}

// Output i has the shape of input i.
Status CollectiveAllReduceShape(InferenceContext& context) {
  int64_t group_size = 0;
  WEFT_RETURN_IF_ERROR(CheckGroupSize(context, &group_size));
  for (int i = 0; i < context.num_outputs(); ++i) context.set_output(i, context.input(i));
  return Status::OK();
}

// The sent value is the input, which must fit the `shape` every member declares.
Status CollectiveBroadcastSendShape(InferenceContext& context) {
  int64_t group_size = 0;
  WEFT_RETURN_IF_ERROR(CheckGroupSize(context, &group_size));
  PartialShape shape;
  WEFT_RETURN_IF_ERROR(context.GetAttr("shape", &shape));
  StatusOr<PartialShape> merged = context.input(0).Merge(shape);
  if (!merged.ok()) {
    return context.Error("input of shape ", context.input(0).DebugString(),
                         " does not fit the shape attr ", shape.DebugString());
  }
  context.set_output(0, *merged);
  return Status::OK();
}

Status CollectiveBroadcastRecvShape(InferenceContext& context) {
  int64_t group_size = 0;
  WEFT_RETURN_IF_ERROR(CheckGroupSize(context, &group_size));
  return shape_fn::ShapeFromShapeAttr(context);
}

// Dimension 0 is group_size times the input's (every member gives the same shape); the others are
// the input's.
Status CollectiveAllGatherShape(InferenceContext& context) {
  int64_t group_size = 0;
  WEFT_RETURN_IF_ERROR(CheckGroupSize(context, &group_size));
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 1));
  const PartialShape& input = context.input(0);
  if (!input.rank_known()) {
    context.set_output(0, PartialShape());
    return Status::OK();
  }
  std::vector<int64_t> dims = input.dims();
  if (dims[0] >= 0) {
    if (dims[0] > INT64_MAX / group_size) {
      return context.Error("dimension 0 of ", input.DebugString(), " times group_size ", group_size,
                           " overflows");
    }
    dims[0] *= group_size;
  }
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

// The attrs that name a member's collective; stateful, so that two members are never merged.
OpDefBuilder& GroupAttrs(OpDefBuilder& builder) {
  return builder.Attr("group_size: int")
      .Attr("group_key: int")
      .Attr("instance_key: int")
      .SetIsStateful();
}

}  // namespace

void RegisterCollectiveOps(OpRegistry& registry) {
  registry.RegisterOrDie(GroupAttrs(OpDefBuilder("CollectiveAllReduce")
                                        .Input("input: N * T")
                                        .Output("output: N * T")
                                        .Attr("T: {float32, float64, bfloat16}")
                                        .Attr("N: int >= 1"))
                             .Attr("merge_op: {'Add'} = 'Add'")
                             .Attr("final_op: {'Id', 'Div'} = 'Id'")
                             .SetShapeFn(CollectiveAllReduceShape)
                             .Doc("Reduces each input elementwise across the group_size members "
                                  "of the collective (merge_op), then applies final_op (Div: "
                                  "divide by group_size); every member gets the result."));
  registry.RegisterOrDie(GroupAttrs(OpDefBuilder("CollectiveBroadcastSend")
                                        .Input("input: T")
                                        .Output("output: T")
                                        .Attr("T: {float32, float64, int32, int64}"))
                             .Attr("shape: shape")
                             .SetShapeFn(CollectiveBroadcastSendShape)
                             .Doc("Sends `input` (of the fully defined `shape`) to the other "
                                  "group_size - 1 members of the broadcast, each a "
                                  "CollectiveBroadcastRecv; outputs `input`."));
  registry.RegisterOrDie(GroupAttrs(OpDefBuilder("CollectiveBroadcastRecv")
                                        .Output("output: T")
                                        .Attr("T: {float32, float64, int32, int64}"))
                             .Attr("shape: shape")
                             .SetShapeFn(CollectiveBroadcastRecvShape)
                             .Doc("Receives the value that the broadcast's one "
                                  "CollectiveBroadcastSend sends; it must be of T and the fully "
                                  "defined `shape`."));
  registry.RegisterOrDie(GroupAttrs(OpDefBuilder("CollectiveAllGather")
                                        .Input("input: T")
                                        .Output("output: T")
                                        .Attr("T: {float32, float64, int32, int64}"))
                             .SetShapeFn(CollectiveAllGatherShape)
                             .Doc("Concatenates the inputs of the group_size members (same dtype "
                                  "and shape, at least one dimension) along dimension 0 in member "
                                  "order (by device name); every member gets the result."));
}

}  // namespace weft::ops
