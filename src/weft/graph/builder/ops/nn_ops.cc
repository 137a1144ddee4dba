#include "weft/graph/builder/ops/nn_ops.h"

#include "weft/graph/builder/ops/op_helpers.h"

namespace weft::ops {
namespace {

NodeBuilder& WindowAttrs(NodeBuilder& builder, const std::vector<int64_t>& strides,
                         const std::string& padding) {
  return builder.Attr("strides", strides).Attr("padding", std::string_view(padding));
}

}  // namespace

Output BiasAdd(const Scope& scope, const Input& value, const Input& bias) {
  return FirstOutput(NodeBuilder(scope, "BiasAdd").Input(value).Input(bias));
}
Output BiasAddGrad(const Scope& scope, const Input& out_backprop) {
  return FirstOutput(NodeBuilder(scope, "BiasAddGrad").Input(out_backprop));
}
Output Relu(const Scope& scope, const Input& features) {
  return FirstOutput(NodeBuilder(scope, "Relu").Input(features));
}
Output ReluGrad(const Scope& scope, const Input& gradients, const Input& features) {
  return FirstOutput(NodeBuilder(scope, "ReluGrad").Input(gradients).Input(features));
}
Output Sigmoid(const Scope& scope, const Input& x) {
  return FirstOutput(NodeBuilder(scope, "Sigmoid").Input(x));
}
Output SigmoidGrad(const Scope& scope, const Input& y, const Input& dy) {
  return FirstOutput(NodeBuilder(scope, "SigmoidGrad").Input(y).Input(dy));
}
Output Tanh(const Scope& scope, const Input& x) {
  return FirstOutput(NodeBuilder(scope, "Tanh").Input(x));
}
Output TanhGrad(const Scope& scope, const Input& y, const Input& dy) {
  return FirstOutput(NodeBuilder(scope, "TanhGrad").Input(y).Input(dy));
}
Output Softplus(const Scope& scope, const Input& features) {
  return FirstOutput(NodeBuilder(scope, "Softplus").Input(features));
}
Output Gelu(const Scope& scope, const Input& features, const GeluAttrs& attrs) {
  return FirstOutput(
      NodeBuilder(scope, "Gelu").Input(features).Attr("approximate", attrs.approximate));
}
Output GeluGrad(const Scope& scope, const Input& gradients, const Input& features,
                const GeluAttrs& attrs) {
  return FirstOutput(NodeBuilder(scope, "GeluGrad")
                         .Input(gradients)
                         .Input(features)
                         .Attr("approximate", attrs.approximate));
}
Output Softmax(const Scope& scope, const Input& logits) {
  return FirstOutput(NodeBuilder(scope, "Softmax").Input(logits));
}
Output LogSoftmax(const Scope& scope, const Input& logits) {
  return FirstOutput(NodeBuilder(scope, "LogSoftmax").Input(logits));
}

SparseSoftmaxCrossEntropyWithLogitsOutputs SparseSoftmaxCrossEntropyWithLogits(
    const Scope& scope, const Input& features, const Input& labels) {
  NodeBuilder builder(scope, "SparseSoftmaxCrossEntropyWithLogits");
  auto outputs = TwoOutputs(builder.Input(features).Input(labels));
  return {outputs.first, outputs.second};
}

FusedAttentionOutputs FusedAttention(const Scope& scope, const Input& query, const Input& key,
                                     const Input& value, const Input& key_lengths,
                                     const FusedAttentionAttrs& attrs) {
  NodeBuilder builder(scope, "FusedAttention");
  builder.Input(query).Input(key).Input(value).Input(key_lengths);
  auto outputs = TwoOutputs(builder.Attr("causal", attrs.causal)
                                .Attr("scale", attrs.scale)
                                .Attr("layout", attrs.layout)
                                .Attr("precision", attrs.precision));
  return {outputs.first, outputs.second};
}

FusedAttentionGradOutputs FusedAttentionGrad(const Scope& scope, const Input& query,
                                             const Input& key, const Input& value,
                                             const Input& key_lengths, const Input& output,
                                             const Input& logsumexp, const Input& output_gradient,
                                             const FusedAttentionAttrs& attrs) {
  Node* node = NodeBuilder(scope, "FusedAttentionGrad")
                   .Input(query)
                   .Input(key)
                   .Input(value)
                   .Input(key_lengths)
                   .Input(output)
                   .Input(logsumexp)
                   .Input(output_gradient)
                   .Attr("causal", attrs.causal)
                   .Attr("scale", attrs.scale)
                   .Attr("layout", attrs.layout)
                   .Attr("precision", attrs.precision)
                   .Finalize();
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

FusedLayerNormOutputs FusedLayerNorm(const Scope& scope, const Input& x, const Input& scale,
                                     const Input& offset, float epsilon) {
  Node* node = NodeBuilder(scope, "FusedLayerNorm")
                   .Input(x)
                   .Input(scale)
                   .Input(offset)
                   .Attr("epsilon", epsilon)
                   .Finalize();
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

FusedLayerNormGradOutputs FusedLayerNormGrad(const Scope& scope, const Input& y_backprop,
                                             const Input& x, const Input& scale, const Input& mean,
                                             const Input& inverse_std) {
  Node* node = NodeBuilder(scope, "FusedLayerNormGrad")
                   .Input(y_backprop)
                   .Input(x)
                   .Input(scale)
                   .Input(mean)
                   .Input(inverse_std)
                   .Finalize();
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

Output Conv2D(const Scope& scope, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding) {
  NodeBuilder builder(scope, "Conv2D");
  builder.Input(input).Input(filter);
  return FirstOutput(WindowAttrs(builder, strides, padding));
}

Output Conv2DBackpropInput(const Scope& scope, const Input& input_sizes, const Input& filter,
                           const Input& out_backprop, const std::vector<int64_t>& strides,
                           const std::string& padding) {
  NodeBuilder builder(scope, "Conv2DBackpropInput");
  builder.Input(input_sizes).Input(filter).Input(out_backprop);
  return FirstOutput(WindowAttrs(builder, strides, padding));
}

Output Conv2DBackpropFilter(const Scope& scope, const Input& input, const Input& filter_sizes,
                            const Input& out_backprop, const std::vector<int64_t>& strides,
                            const std::string& padding) {
  NodeBuilder builder(scope, "Conv2DBackpropFilter");
  builder.Input(input).Input(filter_sizes).Input(out_backprop);
  return FirstOutput(WindowAttrs(builder, strides, padding));
}

Output MaxPool(const Scope& scope, const Input& input, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding) {
  NodeBuilder builder(scope, "MaxPool");
  builder.Input(input).Attr("ksize", ksize);
  return FirstOutput(WindowAttrs(builder, strides, padding));
}

Output MaxPoolGrad(const Scope& scope, const Input& orig_input, const Input& orig_output,
                   const Input& grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding) {
  NodeBuilder builder(scope, "MaxPoolGrad");
  builder.Input(orig_input).Input(orig_output).Input(grad).Attr("ksize", ksize);
  return FirstOutput(WindowAttrs(builder, strides, padding));
}

Output AvgPool(const Scope& scope, const Input& value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding) {
  NodeBuilder builder(scope, "AvgPool");
  builder.Input(value).Attr("ksize", ksize);
  return FirstOutput(WindowAttrs(builder, strides, padding));
}

Output AvgPoolGrad(const Scope& scope, const Input& orig_input_shape, const Input& grad,
                   const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                   const std::string& padding) {
  NodeBuilder builder(scope, "AvgPoolGrad");
  builder.Input(orig_input_shape).Input(grad).Attr("ksize", ksize);
  return FirstOutput(WindowAttrs(builder, strides, padding));
}

}  // namespace weft::ops
