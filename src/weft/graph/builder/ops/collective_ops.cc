#include "weft/graph/builder/ops/collective_ops.h"

#include "weft/graph/builder/ops/op_helpers.h"

namespace weft::ops {
namespace {

NodeBuilder& GroupAttrs(NodeBuilder& builder, int64_t group_size, int64_t group_key,
                        int64_t instance_key) {
  return builder.Attr("group_size", group_size)
      .Attr("group_key", group_key)
      .Attr("instance_key", instance_key);
}

NodeBuilder& GroupAttrs(NodeBuilder& builder, const CollectiveGroupAttrs& attrs) {
  return GroupAttrs(builder, attrs.group_size, attrs.group_key, attrs.instance_key);
}

}  // namespace

std::vector<Output> CollectiveAllReduce(const Scope& scope, const std::vector<Output>& inputs,
                                        const CollectiveAllReduceAttrs& attrs) {
  NodeBuilder builder(scope, "CollectiveAllReduce");
  GroupAttrs(builder.InputList(inputs), attrs.group_size, attrs.group_key, attrs.instance_key)
      .Attr("merge_op", std::string("Add"))
      .Attr("final_op", attrs.final_op);
  Node* node = builder.Finalize();
  std::vector<Output> outputs;
  if (node == nullptr) return outputs;
  for (int i = 0; i < node->num_outputs(); ++i) outputs.emplace_back(node, i);
  return outputs;
}

Output CollectiveBroadcastSend(const Scope& scope, const Input& input, const PartialShape& shape,
                               const CollectiveGroupAttrs& attrs) {
  NodeBuilder builder(scope, "CollectiveBroadcastSend");
  return FirstOutput(GroupAttrs(builder.Input(input), attrs).Attr("shape", shape));
}

Output CollectiveBroadcastRecv(const Scope& scope, DataType dtype, const PartialShape& shape,
                               const CollectiveGroupAttrs& attrs) {
  NodeBuilder builder(scope, "CollectiveBroadcastRecv");
  return FirstOutput(GroupAttrs(builder, attrs).Attr("T", dtype).Attr("shape", shape));
}

Output CollectiveAllGather(const Scope& scope, const Input& input,
                           const CollectiveGroupAttrs& attrs) {
  NodeBuilder builder(scope, "CollectiveAllGather");
  return FirstOutput(GroupAttrs(builder.Input(input), attrs));
}

}  // namespace weft::ops
