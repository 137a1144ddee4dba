#include "weft/graph/builder/ops/collective_ops.h"

namespace weft::ops {

std::vector<Output> CollectiveAllReduce(const Scope& scope, const std::vector<Output>& inputs,
                                        const CollectiveAllReduceAttrs& attrs) {
  NodeBuilder builder(scope, "CollectiveAllReduce");
  builder.InputList(inputs)
      .Attr("group_size", attrs.group_size)
      .Attr("group_key", attrs.group_key)
      .Attr("instance_key", attrs.instance_key)
      .Attr("merge_op", std::string("Add"))
      .Attr("final_op", attrs.final_op);
  Node* node = builder.Finalize();
  std::vector<Output> outputs;
  if (node == nullptr) return outputs;
  for (int i = 0; i < node->num_outputs(); ++i) outputs.emplace_back(node, i);
  return outputs;
}

}  // namespace weft::ops
