// The standard Fashion-MNIST models (DESIGN.md workloads W1 and W2), built from layers
// (layers/): an MLP 784-256-256-10 with ReLU, and a CNN conv5x5x32-ReLU-maxpool2, conv5x5x64-ReLU-
// maxpool2, dense 1024-ReLU, dense 10. Loss is the mean sparse softmax cross-entropy. Weights are
// Glorot-uniform (seeded: the same seed builds the same initial values), biases zero.
//
// A VariableFactory decides what each weight is: by default a plain Variable::Create; a
// distribution strategy passes one that returns, for each replica, that replica's component of a
// distributed variable (the factory then receives the same names and initializers in every
// replica, in the same order).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/variable.h"
#include "weft/train/layers/layer.h"

namespace weft::train {

// The image models, and W6's CharTransformer (char_transformer.h; not built here).
enum class ModelKind { kMlp, kCnn, kCharTransformer };

// "mlp" / "cnn" / "char_transformer"; InvalidArgument naming the unknown model.
StatusOr<ModelKind> ParseModelKind(const std::string& name);

// The graph of one standard model as BuildModel built it: what to feed, fetch and train.
struct BuiltModel {
  Output images;   // Placeholder float32 [?, 784], pixels in [0, 1]
  Output labels;   // Placeholder int64 [?], classes in [0, 10)
  Output logits;   // float32 [?, 10]
  Output loss;     // float32 scalar: mean cross-entropy over the batch
  Output correct;  // int64 scalar: examples of the batch whose argmax is the label
  std::vector<Variable> variables;
  std::vector<Output> initializers;  // run once before training
};

// The layers of `kind` for images [batch, 784] (the CNN reshapes them to 28x28x1 first), named
// as their variables are in checkpoints ("dense1/kernel", "conv1/kernel", ...); none for a model
// that is not an image model. `mlp_width` is the MLP's hidden layers' width (W1's is 256; wider
// ones make the large models that measurements of moving a model's state need).
std::vector<std::unique_ptr<Layer>> StandardLayers(ModelKind kind, int64_t seed,
                                                   int64_t mlp_width = 256);

// Makes one variable named `name` in `scope` (which also carries the device to use).
using VariableFactory =
    std::function<StatusOr<Variable>(const Scope& scope, std::string_view name,
                                     const TensorShape& shape, const Initializer& initializer)>;

// Builds the forward graph of image model `kind` in `scope` (InvalidArgument for another); errors
// are those of the scope or of `factory`.
// A null factory means Variable::Create (float32). BuiltModel::initializers then holds each
// variable's initializer; with a factory it holds none (whoever made the variables initializes
// them).
StatusOr<BuiltModel> BuildModel(const Scope& scope, ModelKind kind, int64_t seed,
                                const VariableFactory& factory = nullptr);

}  // namespace weft::train
