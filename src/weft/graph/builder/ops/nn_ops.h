// Typed builders for the neural-network ops (see ops/nn_ops.cc for their semantics). Images are
// NHWC, filters [height, width, in_channels, out_channels]. After an error in the scope each
// returns an empty Output and the scope keeps the error.
#pragma once

#include <string>
#include <vector>

#include "weft/graph/builder/node_builder.h"

namespace weft::ops {

Output BiasAdd(const Scope& scope, const Input& value, const Input& bias);
Output BiasAddGrad(const Scope& scope, const Input& out_backprop);
Output Relu(const Scope& scope, const Input& features);
Output ReluGrad(const Scope& scope, const Input& gradients, const Input& features);
Output Sigmoid(const Scope& scope, const Input& x);
Output SigmoidGrad(const Scope& scope, const Input& y, const Input& dy);
Output Tanh(const Scope& scope, const Input& x);
Output TanhGrad(const Scope& scope, const Input& y, const Input& dy);
Output Softplus(const Scope& scope, const Input& features);
struct GeluAttrs {
  bool approximate = false;  // the tanh approximation instead of the exact erf form
};
// x * Phi(x), Phi the standard normal CDF (see ops/nn_ops.cc for the approximate form).
Output Gelu(const Scope& scope, const Input& features, const GeluAttrs& attrs = {});
// gradients * Gelu'(features), under the same attrs as the Gelu.
Output GeluGrad(const Scope& scope, const Input& gradients, const Input& features,
                const GeluAttrs& attrs = {});
Output Softmax(const Scope& scope, const Input& logits);
Output LogSoftmax(const Scope& scope, const Input& logits);

struct SparseSoftmaxCrossEntropyWithLogitsOutputs {
  Output loss;      // [batch]
  Output backprop;  // [batch, classes]: gradient of loss with respect to features
};
SparseSoftmaxCrossEntropyWithLogitsOutputs SparseSoftmaxCrossEntropyWithLogits(
    const Scope& scope, const Input& features, const Input& labels);

// Scaled dot-product attention per batch entry and head, its softmax streamed over blocks of keys
// (see ops/attention_ops.cc): query [B, H, Tq, D], key [B, H, Tk, D], value [B, H, Tk, Dv],
// key_lengths int32 [B] (keys at or past key_lengths[b] are masked; a vector of Tk masks none).
struct FusedAttentionAttrs {
  // Query row i also ignores keys j > i + (Tk - Tq): the mask is aligned bottom-right, so the last
  // query sees every key, as for new queries after a key/value cache.
  bool causal = false;
  float scale = 0;  // multiplies query . key; 0 means 1/sqrt(D)
  // "BHTD" as above, or "BTHD": query [B, Tq, H, D], key [B, Tk, H, D], value [B, Tk, H, Dv],
  // output [B, Tq, H, Dv], the layout of a projection [B * T, H * D] reshaped (no transposes).
  std::string layout = "BHTD";
  // "bfloat16" (float32 operands only): the products may take operands rounded to bfloat16, with
  // float32 sums and softmax statistics, where the CPU has AVX512-BF16 (mixed_bfloat16's
  // attention); "float32" multiplies in float32.
  std::string precision = "float32";
};
struct FusedAttentionOutputs {
  Output output;     // [B, H, Tq, Dv] (or [B, Tq, H, Dv]); 0 for a query row that attends no key
  Output logsumexp;  // [B, H, Tq]: each row's log-sum-exp of its scores, for the gradient
};
FusedAttentionOutputs FusedAttention(const Scope& scope, const Input& query, const Input& key,
                                     const Input& value, const Input& key_lengths,
                                     const FusedAttentionAttrs& attrs = {});
struct FusedAttentionGradOutputs {
  Output query_gradient;  // each the shape of its input
  Output key_gradient;
  Output value_gradient;
};
// The gradients of FusedAttention's inputs from its inputs, outputs and the gradient of output,
// under the same attrs.
FusedAttentionGradOutputs FusedAttentionGrad(const Scope& scope, const Input& query,
                                             const Input& key, const Input& value,
                                             const Input& key_lengths, const Input& output,
                                             const Input& logsumexp, const Input& output_gradient,
                                             const FusedAttentionAttrs& attrs = {});

// Each row of x [..., C] normalised over its last dimension, times scale [C], plus offset [C];
// mean and inverse_std [...] (1 / sqrt(variance + epsilon)) are each row's, for the gradient.
struct FusedLayerNormOutputs {
  Output y;
  Output mean;
  Output inverse_std;
};
FusedLayerNormOutputs FusedLayerNorm(const Scope& scope, const Input& x, const Input& scale,
                                     const Input& offset, float epsilon = 1e-3f);
struct FusedLayerNormGradOutputs {
  Output x_backprop;
  Output scale_backprop;
  Output offset_backprop;
};
FusedLayerNormGradOutputs FusedLayerNormGrad(const Scope& scope, const Input& y_backprop,
                                             const Input& x, const Input& scale, const Input& mean,
                                             const Input& inverse_std);

// Window attrs shared by convolution and pooling: strides is [1, stride_h, stride_w, 1];
// padding is "SAME" or "VALID".
Output Conv2D(const Scope& scope, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding);
Output Conv2DBackpropInput(const Scope& scope, const Input& input_sizes, const Input& filter,
                           const Input& out_backprop, const std::vector<int64_t>& strides,
                           const std::string& padding);
Output Conv2DBackpropFilter(const Scope& scope, const Input& input, const Input& filter_sizes,
                            const Input& out_backprop, const std::vector<int64_t>& strides,
                            const std::string& padding);
Output MaxPool(const Scope& scope, const Input& input, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);
Output MaxPoolGrad(const Scope& scope, const Input& orig_input, const Input& orig_output,
                   const Input& grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding);
// The mean of each window over its cells inside the image (SAME edges average fewer cells).
Output AvgPool(const Scope& scope, const Input& value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);
// `orig_input_shape` is the int32 [4] shape of AvgPool's input.
Output AvgPoolGrad(const Scope& scope, const Input& orig_input_shape, const Input& grad,
                   const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                   const std::string& padding);

}  // namespace weft::ops
