#include "weft/train/layers/layer.h"

#include <map>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
#include "weft/distribute/replica_context.h"
#include "weft/train/random_seed.h"

namespace weft::train {
namespace {

thread_local LayerCallContext* current_call_context = nullptr;

// "dense", "dense_1", ...: automatic names of layers called outside a model, counted for the
// process as the reference's are.
std::string ProcessUniqueLayerName(std::string_view default_name) {
  static Mutex mu;
  static auto* names = new LayerNames;
  MutexLock lock(mu);
  return names->Take(default_name);
}

int CurrentReplica() {
  const distribute::ReplicaContext* context = distribute::CurrentReplicaContext();
  return context == nullptr ? 0 : context->replica_id();
}

}  // namespace

Output ComputeProduct(const Scope& scope, const Output& a, const Output& b,
                      const std::function<Output(const Output& a, const Output& b)>& product) {
  const LayerCallContext* context = LayerCallContext::Current();
  const DataType compute = context == nullptr ? DataType::kFloat : context->options().compute_dtype;
  if (compute == DataType::kFloat || a.dtype() != DataType::kFloat) return product(a, b);
  return ops::Cast(scope, product(ops::Cast(scope, a, compute), ops::Cast(scope, b, compute)),
                   DataType::kFloat);
}

Output ComputeMatMul(const Scope& scope, const Output& a, const Output& b,
                     const ops::MatMulAttrs& attrs) {
  return ComputeProduct(scope, a, b, [&](const Output& x, const Output& y) {
    return ops::MatMul(scope, x, y, attrs);
  });
}

Output Activate(const Scope& scope, const Output& input, std::string_view activation) {
  if (activation.empty() || activation == "linear") return input;
  if (activation == "relu") return ops::Relu(scope, input);
  if (activation == "sigmoid") return ops::Sigmoid(scope, input);
  if (activation == "tanh") return ops::Tanh(scope, input);
  if (activation == "softmax") return ops::Softmax(scope, input);
  if (activation == "gelu") return ops::Gelu(scope, input);
  if (activation == "gelu_tanh") return ops::Gelu(scope, input, {.approximate = true});
  scope.UpdateStatus(
      InvalidArgument("unknown activation '", activation,
                      "' (expected linear, relu, sigmoid, tanh, softmax, gelu or gelu_tanh)"));
  return Output();
}

std::string LayerNames::Take(std::string_view default_name) {
  int& count = counts_.try_emplace(std::string(default_name), 0).first->second;
  std::string name;
  do {
    name = count == 0 ? std::string(default_name) : StrCat(default_name, "_", count);
    ++count;
  } while (taken_.contains(name));
  taken_.insert(name);
  return name;
}

LayerCallContext::LayerCallContext(bool training, LayerCallOptions options)
    : training_(training), options_(options), previous_(current_call_context) {
  current_call_context = this;
}

LayerCallContext::~LayerCallContext() { current_call_context = previous_; }

LayerCallContext* LayerCallContext::Current() { return current_call_context; }

Layer::Layer(std::string_view default_name, std::string name)
    : default_name_(default_name), name_(std::move(name)) {}

Output Layer::operator()(const Scope& scope, const Output& input) {
  const LayerCallContext* context = LayerCallContext::Current();
  return (*this)(scope, input, context != nullptr && context->training());
}

Output Layer::operator()(const Scope& scope, const Output& input, bool training) {
  if (!scope.ok()) return Output();
  if (!input) {
    Fail(scope, "the input is missing");
    return Output();
  }
  LayerCallContext* context = LayerCallContext::Current();
  LayerNames* names = context != nullptr ? context->options().names : nullptr;
  if (name_.empty()) {
    name_ = names != nullptr ? names->Take(default_name_) : ProcessUniqueLayerName(default_name_);
  } else if (names != nullptr) {
    names->Reserve(name_);
  }
  Scope layer_scope = scope.NewSubScope(name_);
  const Graph* graph = scope.graph();
  const int replica = CurrentReplica();
  std::erase_if(built_, [](const Built& entry) { return entry.owner.expired(); });
  Built* built = nullptr;
  for (Built& candidate : built_) {
    if (candidate.graph == graph && candidate.replica == replica) built = &candidate;
  }
  if (built == nullptr) {
    built_.push_back({scope.graph_as_shared_ptr(), graph, replica, {}, {}});
    // Weights are named after the layer ("dense/kernel") wherever the layer is first called.
    Build(layer_scope, input.shape());
    if (!scope.ok()) {
      built_.pop_back();
      return Output();
    }
    built = &built_.back();
  }
  call_index_ = built->calls++;
  Output output = Forward(layer_scope, input, training, built->weights);
  if (!scope.ok()) return Output();
  if (context != nullptr) context->RecordCall(*this, output);
  return output;
}

Variable Layer::AddWeight(const Scope& scope, std::string_view name, const TensorShape& shape,
                          const Initializer& initializer, bool trainable,
                          const VariableOptions& options) {
  std::optional<int64_t> seed = DerivedSeed(name);
  Variable variable = Variable::Create(
      scope, name, shape, DataType::kFloat,
      seed.has_value() ? initializer.WithDefaultSeed(*seed) : initializer, options);
  if (variable && !built_.empty()) {
    built_.back().weights.push_back(variable);
    built_.back().trainable.push_back(trainable);
  }
  return variable;
}

void Layer::Fail(const Scope& scope, std::string_view message) const {
  scope.UpdateStatus(InvalidArgument("layer '", name(), "' (", type(), "): ", message));
}

std::optional<int64_t> Layer::DerivedSeed(std::string_view what) const {
  const LayerCallContext* context = LayerCallContext::Current();
  // A context without a seed (a model given none, or a loop of one's own) leaves the global one.
  std::optional<int64_t> seed = context != nullptr ? context->options().seed : std::nullopt;
  if (!seed.has_value()) seed = GlobalRandomSeed();
  if (!seed.has_value()) return std::nullopt;
  return DeriveSeed(*seed, StrCat(name(), "/", what));
}

std::vector<Variable> Layer::Select(int which) const {
  std::vector<Variable> selected;
  for (const Built& built : built_) {
    if (built.replica != 0 || built.owner.expired()) continue;
    for (size_t i = 0; i < built.weights.size(); ++i) {
      if (which == 0 || (which == 1) == built.trainable[i]) selected.push_back(built.weights[i]);
    }
    break;
  }
  return selected;
}

std::vector<Variable> Layer::variables() const { return Select(0); }
std::vector<Variable> Layer::trainable_variables() const { return Select(1); }
std::vector<Variable> Layer::non_trainable_variables() const { return Select(2); }

std::vector<Variable> Layer::VariablesIn(const Graph* graph, int replica,
                                         bool trainable_only) const {
  std::vector<Variable> selected;
  for (const Built& built : built_) {
    if (built.graph != graph || built.replica != replica || built.owner.expired()) continue;
    for (size_t i = 0; i < built.weights.size(); ++i) {
      if (!trainable_only || built.trainable[i]) selected.push_back(built.weights[i]);
    }
  }
  return selected;
}

int64_t Layer::CountParams() const {
  int64_t count = 0;
  for (const Variable& variable : variables()) count += variable.shape().num_elements();
  return count;
}

}  // namespace weft::train
