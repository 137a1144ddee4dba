#include "weft/graph/builder/ops/array_ops.h"

#include "weft/graph/builder/ops/op_helpers.h"

namespace weft::ops {

Output Const(const Scope& scope, const Input& value) {
  if (!value.is_constant()) return Identity(scope, value);
  return FirstOutput(NodeBuilder(scope, "Const")
                         .Attr("value", value.value())
                         .Attr("dtype", value.value().dtype()));
}

Output Placeholder(const Scope& scope, DataType dtype, const PartialShape& shape) {
  return FirstOutput(NodeBuilder(scope, "Placeholder").Attr("dtype", dtype).Attr("shape", shape));
}

Output Identity(const Scope& scope, const Input& input) {
  return FirstOutput(NodeBuilder(scope, "Identity").Input(input));
}

Output StopGradient(const Scope& scope, const Input& input) {
  return FirstOutput(NodeBuilder(scope, "StopGradient").Input(input));
}

Output NoOp(const Scope& scope) {
  Node* node = NodeBuilder(scope, "NoOp").Finalize();
  return node ? Output(node, 0) : Output();
}

Output Reshape(const Scope& scope, const Input& tensor, const Input& shape) {
  return FirstOutput(NodeBuilder(scope, "Reshape").Input(tensor).Input(shape));
}

Output Shape(const Scope& scope, const Input& input, DataType out_type) {
  return FirstOutput(NodeBuilder(scope, "Shape").Input(input).Attr("out_type", out_type));
}

Output Size(const Scope& scope, const Input& input, DataType out_type) {
  return FirstOutput(NodeBuilder(scope, "Size").Input(input).Attr("out_type", out_type));
}

Output Rank(const Scope& scope, const Input& input) {
  return FirstOutput(NodeBuilder(scope, "Rank").Input(input));
}

Output ExpandDims(const Scope& scope, const Input& input, const Input& axis) {
  return FirstOutput(NodeBuilder(scope, "ExpandDims").Input(input).Input(axis));
}

Output Squeeze(const Scope& scope, const Input& input, const std::vector<int64_t>& axes) {
  return FirstOutput(NodeBuilder(scope, "Squeeze").Input(input).Attr("squeeze_dims", axes));
}

Output Fill(const Scope& scope, const Input& dims, const Input& value) {
  return FirstOutput(NodeBuilder(scope, "Fill").Input(dims).Input(value));
}

Output ZerosLike(const Scope& scope, const Input& x) {
  return FirstOutput(NodeBuilder(scope, "ZerosLike").Input(x));
}

Output OnesLike(const Scope& scope, const Input& x) {
  return FirstOutput(NodeBuilder(scope, "OnesLike").Input(x));
}

Output Transpose(const Scope& scope, const Input& x, const Input& perm) {
  return FirstOutput(NodeBuilder(scope, "Transpose").Input(x).Input(perm));
}

Output Concat(const Scope& scope, const std::vector<Output>& values, const Input& axis) {
  return FirstOutput(NodeBuilder(scope, "ConcatV2").InputList(values).Input(axis));
}

Output Slice(const Scope& scope, const Input& input, const Input& begin, const Input& size) {
  return FirstOutput(NodeBuilder(scope, "Slice").Input(input).Input(begin).Input(size));
}

Output BroadcastTo(const Scope& scope, const Input& input, const Input& shape) {
  return FirstOutput(NodeBuilder(scope, "BroadcastTo").Input(input).Input(shape));
}

Output Tile(const Scope& scope, const Input& input, const Input& multiples) {
  return FirstOutput(NodeBuilder(scope, "Tile").Input(input).Input(multiples));
}

Output GatherV2(const Scope& scope, const Input& params, const Input& indices, const Input& axis) {
  return FirstOutput(NodeBuilder(scope, "GatherV2").Input(params).Input(indices).Input(axis));
}

Output UnsortedSegmentSum(const Scope& scope, const Input& data, const Input& segment_ids,
                          const Input& num_segments) {
  return FirstOutput(
      NodeBuilder(scope, "UnsortedSegmentSum").Input(data).Input(segment_ids).Input(num_segments));
}

std::vector<Output> DynamicPartition(const Scope& scope, const Input& data, const Input& partitions,
                                     int64_t num_partitions) {
  Node* node = NodeBuilder(scope, "DynamicPartition")
                   .Input(data)
                   .Input(partitions)
                   .Attr("num_partitions", num_partitions)
                   .Finalize();
  std::vector<Output> outputs;
  if (node == nullptr) return outputs;
  for (int i = 0; i < node->num_outputs(); ++i) outputs.emplace_back(node, i);
  return outputs;
}

Output DynamicStitch(const Scope& scope, const std::vector<Output>& indices,
                     const std::vector<Output>& data) {
  if (indices.size() != data.size()) {
    scope.UpdateStatus(
        InvalidArgument("DynamicStitch needs one data tensor per indices tensor, "
                        "got ",
                        indices.size(), " and ", data.size()));
    return Output();
  }
  return FirstOutput(NodeBuilder(scope, "DynamicStitch").InputList(indices).InputList(data));
}

Output Range(const Scope& scope, const Input& start, const Input& limit, const Input& delta) {
  return FirstOutput(NodeBuilder(scope, "Range").Input(start).Input(limit).Input(delta));
}

Output MatrixBandPart(const Scope& scope, const Input& input, const Input& num_lower,
                      const Input& num_upper) {
  return FirstOutput(
      NodeBuilder(scope, "MatrixBandPart").Input(input).Input(num_lower).Input(num_upper));
}

}  // namespace weft::ops
