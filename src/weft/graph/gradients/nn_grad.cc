// Gradient functions of the neural-network ops: BiasAdd, the activations (through their *Grad
// ops, Gelu's fused one included; Softplus through Sigmoid), Softmax and LogSoftmax, sparse softmax
// cross-entropy (through the backprop the op computes), Conv2D (through its two backprop ops),
// MaxPool and AvgPool (through MaxPoolGrad and AvgPoolGrad), FusedAttention (through
// FusedAttentionGrad), FusedLayerNorm (through FusedLayerNormGrad). Gradients of the *Grad ops
// themselves (second order) are not registered.
#include "weft/framework/attr_value_util.h"
#include "weft/graph/gradients/gradients.h"
#include "weft/graph/gradients/internal/grad_helpers.h"

namespace weft {
namespace {

using internal::InputOf;
using internal::ShapeOf;

using Grads = std::vector<Output>;

Status BiasAddGrad(const Scope& scope, Node*, const Grads& dz, Grads* dx) {
  *dx = {dz[0], ops::BiasAddGrad(scope, dz[0])};
  return scope.status();
}

// ReluGrad passes dz where the features were positive; the output is positive exactly there.
Status ReluGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {ops::ReluGrad(scope, dz[0], Output(op, 0))};
  return scope.status();
}

Status SigmoidGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {ops::SigmoidGrad(scope, Output(op, 0), dz[0])};
  return scope.status();
}

Status TanhGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {ops::TanhGrad(scope, Output(op, 0), dz[0])};
  return scope.status();
}

// GeluGrad, under the forward op's approximate attr, from the features.
Status GeluGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  bool approximate = false;
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "approximate", &approximate));
  *dx = {ops::GeluGrad(scope, dz[0], InputOf(op, 0), {.approximate = approximate})};
  return scope.status();
}

// d log(1 + e^x) / dx = e^x / (1 + e^x) = sigmoid(x).
Status SoftplusGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {ops::Mul(scope, dz[0], ops::Sigmoid(scope, InputOf(op, 0)))};
  return scope.status();
}

// y = softmax(x) over the last dim: dx = (dz - sum(dz * y)) * y.
Status SoftmaxGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output y(op, 0);
  Output dot = ops::Sum(scope, ops::Mul(scope, dz[0], y), -1, {.keep_dims = true});
  *dx = {ops::Mul(scope, ops::Sub(scope, dz[0], dot), y)};
  return scope.status();
}

// y = log_softmax(x) over the last dim: dx = dz - exp(y) * sum(dz).
Status LogSoftmaxGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output total = ops::Sum(scope, dz[0], -1, {.keep_dims = true});
  *dx = {ops::Sub(scope, dz[0], ops::Mul(scope, ops::Exp(scope, Output(op, 0)), total))};
  return scope.status();
}

// The op's second output is d(loss)/d(features) per row; scaled by the gradient of each row's
// loss. Labels get none.
Status SparseSoftmaxCrossEntropyGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  if (dz[1]) {
    return Unimplemented(
        "the gradient through the backprop output of SparseSoftmaxCrossEntropyWithLogits (a "
        "second-order gradient) is not implemented");
  }
  if (!dz[0]) {
    *dx = {Output(), Output()};
    return Status::OK();
  }
  Output backprop(op, 1);
  *dx = {ops::Mul(scope, ops::ExpandDims(scope, dz[0], -1), backprop), Output()};
  return scope.status();
}

// FusedAttentionGrad recomputes the probabilities from the saved logsumexp. A gradient arriving
// at logsumexp itself (kept for this function, not meant as a result) is not supported; key_lengths
// gets none.
Status FusedAttentionGradFn(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  if (dz[1]) {
    return Unimplemented(
        "the gradient through the logsumexp output of FusedAttention is not implemented");
  }
  if (!dz[0]) {
    *dx = {Output(), Output(), Output(), Output()};
    return Status::OK();
  }
  ops::FusedAttentionAttrs attrs;
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "causal", &attrs.causal));
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "scale", &attrs.scale));
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "layout", &attrs.layout));
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "precision", &attrs.precision));
  ops::FusedAttentionGradOutputs grads =
      ops::FusedAttentionGrad(scope, InputOf(op, 0), InputOf(op, 1), InputOf(op, 2), InputOf(op, 3),
                              Output(op, 0), Output(op, 1), dz[0], attrs);
  *dx = {grads.query_gradient, grads.key_gradient, grads.value_gradient, Output()};
  return scope.status();
}

// FusedLayerNormGrad from the saved mean and inverse_std. Gradients arriving at those two outputs
// (kept for this function, not meant as results) are not supported.
Status FusedLayerNormGradFn(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  if (dz[1] || dz[2]) {
    return Unimplemented(
        "the gradient through the mean or inverse_std output of FusedLayerNorm is not "
        "implemented");
  }
  if (!dz[0]) {
    *dx = {Output(), Output(), Output()};
    return Status::OK();
  }
  ops::FusedLayerNormGradOutputs grads = ops::FusedLayerNormGrad(
      scope, dz[0], InputOf(op, 0), InputOf(op, 1), Output(op, 1), Output(op, 2));
  *dx = {grads.x_backprop, grads.scale_backprop, grads.offset_backprop};
  return scope.status();
}

struct WindowAttrs {
  std::vector<int64_t> ksize;
  std::vector<int64_t> strides;
  std::string padding;
};

Status GetWindowAttrs(const Node* op, bool has_ksize, WindowAttrs* attrs) {
  if (has_ksize) WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "ksize", &attrs->ksize));
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "strides", &attrs->strides));
  return GetNodeAttr(op->def(), "padding", &attrs->padding);
}

Status Conv2DGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  WindowAttrs attrs;
  WEFT_RETURN_IF_ERROR(GetWindowAttrs(op, /*has_ksize=*/false, &attrs));
  Output input = InputOf(op, 0), filter = InputOf(op, 1);
  *dx = {ops::Conv2DBackpropInput(scope, ShapeOf(scope, input), filter, dz[0], attrs.strides,
                                  attrs.padding),
         ops::Conv2DBackpropFilter(scope, input, ShapeOf(scope, filter), dz[0], attrs.strides,
                                   attrs.padding)};
  return scope.status();
}

Status MaxPoolGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  WindowAttrs attrs;
  WEFT_RETURN_IF_ERROR(GetWindowAttrs(op, /*has_ksize=*/true, &attrs));
  *dx = {ops::MaxPoolGrad(scope, InputOf(op, 0), Output(op, 0), dz[0], attrs.ksize, attrs.strides,
                          attrs.padding)};
  return scope.status();
}

Status AvgPoolGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  WindowAttrs attrs;
  WEFT_RETURN_IF_ERROR(GetWindowAttrs(op, /*has_ksize=*/true, &attrs));
  *dx = {ops::AvgPoolGrad(scope, ShapeOf(scope, InputOf(op, 0)), dz[0], attrs.ksize, attrs.strides,
                          attrs.padding)};
  return scope.status();
}

}  // namespace

void RegisterNnGradients(GradientRegistry& registry) {
  registry.Register("BiasAdd", BiasAddGrad);
  registry.Register("Relu", ReluGrad);
  registry.Register("Sigmoid", SigmoidGrad);
  registry.Register("Tanh", TanhGrad);
  registry.Register("Gelu", GeluGrad);
  registry.Register("Softmax", SoftmaxGrad);
  registry.Register("LogSoftmax", LogSoftmaxGrad);
  registry.Register("SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxCrossEntropyGrad);
  registry.Register("Conv2D", Conv2DGrad);
  registry.Register("MaxPool", MaxPoolGrad);
  registry.Register("AvgPool", AvgPoolGrad);
  registry.Register("Softplus", SoftplusGrad);
  registry.Register("FusedAttention", FusedAttentionGradFn);
  registry.Register("FusedLayerNorm", FusedLayerNormGradFn);
}

}  // namespace weft
