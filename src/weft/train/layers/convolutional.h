// The convolution and pooling layers, after the reference's (Keras) layers of the same names:
// Conv2D, MaxPooling2D and AveragePooling2D, on NHWC images [batch, height, width, channels].
// Padding is named as there: "valid" (windows inside the image) or "same" (output size
// ceil(input / stride)). Not thread-safe (see layer.h).
#pragma once

#include <string>

#include "weft/train/layers/layer.h"

namespace weft::train {

struct Conv2DOptions {
  std::string name{};  // "": "conv2d", "conv2d_1", ...
  int64_t strides = 1;
  std::string padding = "valid";
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::GlorotUniform();
  Initializer bias_initializer = Initializer::Zeros();
};

// activation(conv(input, kernel) + bias): kernel [k, k, in_channels, filters], bias [filters].
class Conv2D final : public Layer {
 public:
  Conv2D(int64_t filters, int64_t kernel_size, std::string activation = "",
         Conv2DOptions options = {});
  std::string_view type() const override { return "Conv2D"; }

 private:
  void Build(const Scope& scope, const PartialShape& input_shape) override;
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  int64_t filters_;
  int64_t kernel_size_;
  std::string activation_;
  Conv2DOptions options_;
};

struct PoolingOptions {
  std::string name{};
  int64_t strides = 0;  // 0: the pool size
  std::string padding = "valid";
};

// The maximum (MaxPooling2D) or the mean (AveragePooling2D; with "same", of the window's elements
// inside the image) of each pool_size x pool_size window.
class Pooling2D : public Layer {
 public:
  enum class Kind { kMax, kAverage };

 protected:
  Pooling2D(Kind kind, int64_t pool_size, PoolingOptions options);

 private:
  void Build(const Scope&, const PartialShape&) override {}
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  Kind kind_;
  int64_t pool_size_;
  PoolingOptions options_;
};

class MaxPooling2D final : public Pooling2D {
 public:
  explicit MaxPooling2D(int64_t pool_size = 2, PoolingOptions options = {})
      : Pooling2D(Kind::kMax, pool_size, std::move(options)) {}
  std::string_view type() const override { return "MaxPooling2D"; }
};

class AveragePooling2D final : public Pooling2D {
 public:
  explicit AveragePooling2D(int64_t pool_size = 2, PoolingOptions options = {})
      : Pooling2D(Kind::kAverage, pool_size, std::move(options)) {}
  std::string_view type() const override { return "AveragePooling2D"; }
};

}  // namespace weft::train
