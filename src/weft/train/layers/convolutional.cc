#include "weft/train/layers/convolutional.h"

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

// The op attribute for a Keras padding name; empty for an unknown one.
std::string PaddingAttr(const std::string& padding) {
  if (padding == "valid") return "VALID";
  if (padding == "same") return "SAME";
  return "";
}

bool IsImage(const PartialShape& shape) {
  return shape.rank_known() && shape.rank() == 4 && shape.dim(3) >= 0;
}

}  // namespace

Conv2D::Conv2D(int64_t filters, int64_t kernel_size, std::string activation, Conv2DOptions options)
    : Layer("conv2d", options.name),
      filters_(filters),
      kernel_size_(kernel_size),
      activation_(std::move(activation)),
      options_(std::move(options)) {}

void Conv2D::Build(const Scope& scope, const PartialShape& input_shape) {
  if (filters_ <= 0 || kernel_size_ <= 0 || options_.strides <= 0) {
    return Fail(scope, StrCat("filters, kernel size and strides must be positive, got ", filters_,
                              ", ", kernel_size_, " and ", options_.strides));
  }
  if (PaddingAttr(options_.padding).empty()) {
    return Fail(scope, StrCat("unknown padding '", options_.padding, "' (expected valid or same)"));
  }
  if (!IsImage(input_shape)) {
    return Fail(scope, StrCat("needs NHWC images [batch, height, width, channels] with known ",
                              "channels, got ", input_shape.DebugString()));
  }
  AddWeight(scope, "kernel",
            TensorShape({kernel_size_, kernel_size_, input_shape.dim(3), filters_}),
            options_.kernel_initializer);
  if (options_.use_bias) {
    AddWeight(scope, "bias", TensorShape({filters_}), options_.bias_initializer);
  }
}

Output Conv2D::Forward(const Scope& scope, const Output& input, bool /*training*/,
                       const std::vector<Variable>& weights) {
  const int64_t channels = weights[0].shape().dim_size(2);
  if (!IsImage(input.shape()) || input.shape().dim(3) != channels) {
    Fail(scope, StrCat("was built for images with ", channels, " channels, got ",
                       input.shape().DebugString()));
    return Output();
  }
  const int64_t s = options_.strides;
  Output z = ComputeProduct(
      scope, input, weights[0].Read(scope), [&](const Output& images, const Output& filter) {
        return ops::Conv2D(scope, images, filter, {1, s, s, 1}, PaddingAttr(options_.padding));
      });
  if (options_.use_bias) z = ops::BiasAdd(scope, z, weights[1].Read(scope));
  return Activate(scope, z, activation_);
}

Pooling2D::Pooling2D(Kind kind, int64_t pool_size, PoolingOptions options)
    : Layer(kind == Kind::kMax ? "max_pooling2d" : "average_pooling2d", options.name),
      kind_(kind),
      pool_size_(pool_size),
      options_(std::move(options)) {}

Output Pooling2D::Forward(const Scope& scope, const Output& input, bool /*training*/,
                          const std::vector<Variable>& /*weights*/) {
  const int64_t k = pool_size_;
  const int64_t s = options_.strides == 0 ? k : options_.strides;
  const std::string padding = PaddingAttr(options_.padding);
  if (k <= 0 || s <= 0 || padding.empty()) {
    Fail(scope, StrCat("needs a positive pool size and strides and padding valid or same, got ", k,
                       ", ", s, " and '", options_.padding, "'"));
    return Output();
  }
  if (!IsImage(input.shape())) {
    Fail(scope, StrCat("needs NHWC images [batch, height, width, channels], got ",
                       input.shape().DebugString()));
    return Output();
  }
  return kind_ == Kind::kMax ? ops::MaxPool(scope, input, {1, k, k, 1}, {1, s, s, 1}, padding)
                             : ops::AvgPool(scope, input, {1, k, k, 1}, {1, s, s, 1}, padding);
}

}  // namespace weft::train
