#include "weft/train/layers/core.h"

#include "weft/core/str_util.h"
#include "weft/distribute/replica_context.h"
#include "weft/distribute/sharding/partitioners.h"
#include "weft/distribute/sharding/sharded_variable.h"
#include "weft/distribute/strategy.h"

namespace weft::train {
namespace {

// Known dims of `shape` but the first (the batch), or an empty optional-like flag when one is
// unknown.
bool KnownFeatureDims(const PartialShape& shape, std::vector<int64_t>* dims) {
  if (!shape.rank_known()) return false;
  dims->clear();
  for (int i = 1; i < shape.rank(); ++i) {
    if (shape.dim(i) < 0) return false;
    dims->push_back(shape.dim(i));
  }
  return true;
}

}  // namespace

Dense::Dense(int64_t units, std::string activation, DenseOptions options)
    : Layer("dense", options.name),
      units_(units),
      activation_(std::move(activation)),
      options_(std::move(options)) {}

void Dense::Build(const Scope& scope, const PartialShape& input_shape) {
  if (units_ <= 0) return Fail(scope, StrCat("units must be positive, got ", units_));
  std::vector<int64_t> features;
  if (!KnownFeatureDims(input_shape, &features) || features.empty()) {
    return Fail(scope, StrCat("needs an input [batch, ..., features] whose dimensions but the ",
                              "batch are known, got ", input_shape.DebugString()));
  }
  AddWeight(scope, "kernel", TensorShape({features.back(), units_}), options_.kernel_initializer);
  if (options_.use_bias) AddWeight(scope, "bias", TensorShape({units_}), options_.bias_initializer);
}

Output Dense::Forward(const Scope& scope, const Output& input, bool /*training*/,
                      const std::vector<Variable>& weights) {
  std::vector<int64_t> features;
  if (!KnownFeatureDims(input.shape(), &features) || features.empty() ||
      features.back() != weights[0].shape().dim_size(0)) {
    Fail(scope, StrCat("was built for inputs [batch, ..., ", weights[0].shape().dim_size(0),
                       "], got ", input.shape().DebugString()));
    return Output();
  }
  // Rank > 2: the kernel applies to the last dimension (as a [batch * ..., in] matrix).
  Output flat =
      features.size() == 1 ? input : ops::Reshape(scope, input, {int64_t{-1}, features.back()});
  Output z = ComputeMatMul(scope, flat, weights[0].Read(scope));
  if (options_.use_bias) z = ops::BiasAdd(scope, z, weights[1].Read(scope));
  Output activated = Activate(scope, z, activation_);
  if (features.size() == 1) return activated;
  std::vector<int64_t> shape = {-1};
  shape.insert(shape.end(), features.begin(), features.end() - 1);
  shape.push_back(units_);
  return ops::Reshape(scope, activated, Tensor::FromVector<int64_t>(shape));
}

Activation::Activation(std::string activation, std::string name)
    : Layer("activation", std::move(name)), activation_(std::move(activation)) {}

Output Activation::Forward(const Scope& scope, const Output& input, bool /*training*/,
                           const std::vector<Variable>& /*weights*/) {
  return Activate(scope, input, activation_);
}

Output Flatten::Forward(const Scope& scope, const Output& input, bool /*training*/,
                        const std::vector<Variable>& /*weights*/) {
  std::vector<int64_t> features;
  if (!KnownFeatureDims(input.shape(), &features)) {
    Fail(scope, StrCat("needs an input whose dimensions but the batch are known, got ",
                       input.shape().DebugString()));
    return Output();
  }
  int64_t size = 1;
  for (int64_t dim : features) size *= dim;
  return ops::Reshape(scope, input, {int64_t{-1}, size});
}

Reshape::Reshape(std::vector<int64_t> target_shape, std::string name)
    : Layer("reshape", std::move(name)), target_shape_(std::move(target_shape)) {}

Output Reshape::Forward(const Scope& scope, const Output& input, bool /*training*/,
                        const std::vector<Variable>& /*weights*/) {
  for (int64_t dim : target_shape_) {
    if (dim <= 0) {
      Fail(scope, StrCat("the target shape's dimensions must be positive, got ", dim));
      return Output();
    }
  }
  std::vector<int64_t> shape = {-1};
  shape.insert(shape.end(), target_shape_.begin(), target_shape_.end());
  return ops::Reshape(scope, input, Tensor::FromVector<int64_t>(shape));
}

Dropout::Dropout(double rate, int64_t seed, std::string name)
    : Layer("dropout", std::move(name)), rate_(rate), seed_(seed) {}

Output Dropout::Forward(const Scope& scope, const Output& input, bool training,
                        const std::vector<Variable>& /*weights*/) {
  if (!(rate_ >= 0 && rate_ < 1)) {
    Fail(scope, StrCat("rate must be in [0, 1), got ", rate_));
    return Output();
  }
  if (!training || rate_ == 0) return input;
  ops::RandomAttrs random;
  const std::optional<int64_t> seed =
      seed_ != 0 ? std::optional<int64_t>(seed_) : DerivedSeed("dropout");
  if (seed.has_value()) {
    // Each replica, and each step of an unrolled execution, draws its own masks, repeatably.
    const distribute::ReplicaContext* context = distribute::CurrentReplicaContext();
    random.seed = *seed;
    random.seed2 = 1 + (context == nullptr ? 0 : context->replica_id()) +
                   (static_cast<int64_t>(call_index()) << 16);
  }
  Output uniform = ops::RandomUniform(scope, ops::Shape(scope, input), input.dtype(), random);
  Output keep = ops::Cast(scope, ops::GreaterEqual(scope, uniform, ops::Const(scope, float(rate_))),
                          input.dtype());
  return ops::Mul(scope, ops::Mul(scope, input, keep),
                  ops::Const(scope, static_cast<float>(1.0 / (1.0 - rate_))));
}

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Layer("embedding", options.name),
      input_dim_(input_dim),
      output_dim_(output_dim),
      options_(std::move(options)) {}

void Embedding::Build(const Scope& scope, const PartialShape& /*input_shape*/) {
  if (input_dim_ <= 0 || output_dim_ <= 0) {
    return Fail(scope, StrCat("input_dim and output_dim must be positive, got ", input_dim_,
                              " and ", output_dim_));
  }
  const TensorShape shape({input_dim_, output_dim_});
  // Under a strategy that shards large tables (ParameterServerStrategy), the table is made in
  // parts, each through the strategy's creator (so each lands on its own ps task).
  const distribute::ReplicaContext* replica = distribute::CurrentReplicaContext();
  const int64_t shards =
      replica != nullptr ? replica->strategy().extended().NumShards(shape, DataType::kFloat) : 1;
  if (shards <= 1) {
    AddWeight(scope, "embeddings", shape, options_.embeddings_initializer);
    return;
  }
  const std::vector<int64_t> rows = distribute::ShardRows(input_dim_, shards);
  for (size_t i = 0; i < rows.size(); ++i) {
    AddWeight(scope, StrCat("embeddings/part_", i), TensorShape({rows[i], output_dim_}),
              options_.embeddings_initializer);
  }
}

Output Embedding::Forward(const Scope& scope, const Output& input, bool /*training*/,
                          const std::vector<Variable>& weights) {
  if (input.dtype() != DataType::kInt32 && input.dtype() != DataType::kInt64) {
    Fail(scope, StrCat("needs int32 or int64 ids, got ", DataTypeName(input.dtype())));
    return Output();
  }
  // Looked up where the table lives: only ids go to it and rows come back, and the optimizer gets
  // a sparse gradient of the rows looked up (see GradientAndVariable).
  if (weights.size() == 1) return ops::ResourceGather(scope, weights[0].handle(), input);
  // A sharded table: each part gathers its own ids where it lives (only ids go to each part and
  // only its rows come back), and each part gets a sparse gradient of its rows.
  return distribute::ShardedVariable::FromShards(scope, "embeddings", weights).Lookup(scope, input);
}

}  // namespace weft::train
