// CollectiveAllReduce: the all-reduce that MirroredStrategy puts on each replica's device to sum
// (or average) its gradients with the other replicas'. One node reduces a bucket of N tensors in
// one collective, so many small gradients share one rendezvous without being concatenated. Members
// of one reduction share group_key and instance_key; the step's CollectiveExecutor matches them.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

// Output i has the shape of input i; a group needs at least one member.
Status CollectiveAllReduceShape(InferenceContext& context) {
  int64_t group_size = 0;
  WEFT_RETURN_IF_ERROR(context.GetAttr("group_size", &group_size));
  if (group_size < 1) return context.Error("group_size must be at least 1, got ", group_size);
  for (int i = 0; i < context.num_outputs(); ++i) context.set_output(i, context.input(i));
  return Status::OK();
}

}  // namespace

void RegisterCollectiveOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("CollectiveAllReduce")
                             .Input("input: N * T")
                             .Output("output: N * T")
                             .Attr("T: {float32, float64}")
                             .Attr("N: int >= 1")
                             .Attr("group_size: int")
                             .Attr("group_key: int")
                             .Attr("instance_key: int")
                             .Attr("merge_op: {'Add'} = 'Add'")
                             .Attr("final_op: {'Id', 'Div'} = 'Id'")
                             .SetIsStateful()
                             .SetShapeFn(CollectiveAllReduceShape)
                             .Doc("Reduces each input elementwise across the group_size members "
                                  "of the collective (merge_op), then applies final_op (Div: "
                                  "divide by group_size); every member gets the result."));
}

}  // namespace weft::ops
