// The core layers, after the reference's (Keras) layers of the same names: Dense, Activation,
// Flatten, Dropout and Embedding. Each is a Layer (layer.h): called on an Output, it creates its
// variables on its first call in each replica. Not thread-safe (see layer.h).
#pragma once

#include <string>
#include <vector>

#include "weft/train/layers/layer.h"

namespace weft::train {

struct DenseOptions {
  std::string name{};  // "": "dense", "dense_1", ...
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::GlorotUniform();
  Initializer bias_initializer = Initializer::Zeros();
};

// activation(input · kernel + bias) over the last dimension of the input ([batch, in] or
// [batch, ..., in] with every dimension but the batch known): kernel [in, units], bias [units].
class Dense final : public Layer {
 public:
  explicit Dense(int64_t units, std::string activation = "", DenseOptions options = {});
  std::string_view type() const override { return "Dense"; }
  int64_t units() const { return units_; }

 private:
  void Build(const Scope& scope, const PartialShape& input_shape) override;
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  int64_t units_;
  std::string activation_;
  DenseOptions options_;
};

// An activation function as a layer ("relu", ...; see Activate in layer.h).
class Activation final : public Layer {
 public:
  explicit Activation(std::string activation, std::string name = "");
  std::string_view type() const override { return "Activation"; }

 private:
  void Build(const Scope&, const PartialShape&) override {}
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  std::string activation_;
};

// [batch, d1, ..., dk] -> [batch, d1 * ... * dk]; d1 ... dk must be known.
class Flatten final : public Layer {
 public:
  explicit Flatten(std::string name = "") : Layer("flatten", std::move(name)) {}
  std::string_view type() const override { return "Flatten"; }

 private:
  void Build(const Scope&, const PartialShape&) override {}
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;
};

// [batch, ...] -> [batch, target_shape...] (the target excludes the batch; the element counts must
// agree, which the step checks).
class Reshape final : public Layer {
 public:
  explicit Reshape(std::vector<int64_t> target_shape, std::string name = "");
  std::string_view type() const override { return "Reshape"; }

 private:
  void Build(const Scope&, const PartialShape&) override {}
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  std::vector<int64_t> target_shape_;
};

// In training, zeroes each element with probability `rate` and scales the rest by 1 / (1 - rate);
// in inference, the identity. A nonzero `seed` makes the masks repeat from run to run (each
// replica draws its own); 0 takes a seed derived from the model's (random_seed.h), or draws
// differently every session when there is none. `rate` must be in [0, 1).
class Dropout final : public Layer {
 public:
  explicit Dropout(double rate, int64_t seed = 0, std::string name = "");
  std::string_view type() const override { return "Dropout"; }

 private:
  void Build(const Scope&, const PartialShape&) override {}
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  double rate_;
  int64_t seed_;
};

struct EmbeddingOptions {
  std::string name{};  // "": "embedding", ...
  Initializer embeddings_initializer = Initializer::RandomUniform(-0.05, 0.05);
};

// Integer ids [...] in [0, input_dim) -> rows of `embeddings` [input_dim, output_dim]: [...,
// output_dim]. An id out of range fails the step, naming it.
class Embedding final : public Layer {
 public:
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  std::string_view type() const override { return "Embedding"; }

 private:
  void Build(const Scope& scope, const PartialShape& input_shape) override;
  Output Forward(const Scope& scope, const Output& input, bool training,
                 const std::vector<Variable>& weights) override;

  int64_t input_dim_;
  int64_t output_dim_;
  EmbeddingOptions options_;
};

}  // namespace weft::train
