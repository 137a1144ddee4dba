// Layer: the base of Keras-style layers. A layer is called on an Output to build its computation
// in a graph and creates its variables on its first call — once per replica and graph, through
// Variable::Create, so inside distribute::Strategy::Scope() and Strategy::Run each replica gets its
// component of one distributed variable and the same model code runs on one device or many.
// Calling a layer again in the same replica and graph reuses its variables (shared weights; a
// model's training and inference graphs). LayerCallContext carries what a model being built
// needs from its layers (the training flag, update ops such as moving statistics, the calls made)
// and what it gives them (its random seed, its count of automatic names).
//
// Not thread-safe: a layer is built by one thread at a time (Strategy::Run's replicas take turns).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/variable.h"

namespace weft::train {

class Layer;

// `input` through the activation named `activation`, as the reference names them: "" or "linear"
// (unchanged), "relu", "sigmoid", "tanh", "softmax", "gelu" (exact, the reference's default) and
// "gelu_tanh" (its tanh approximation). Another name is an InvalidArgument recorded in `scope`
// listing these.
Output Activate(const Scope& scope, const Output& input, std::string_view activation);

// product(a, b) (a MatMul, a Conv2D) as the model being built computes its layers' products: in
// float32, or under a bfloat16 policy with both operands rounded to bfloat16 and the product
// (accumulated in float32 by the kernel) widened back to float32, so that biases, activations and
// normalisations after it stay float32. Outside a model: float32.
Output ComputeProduct(const Scope& scope, const Output& a, const Output& b,
                      const std::function<Output(const Output& a, const Output& b)>& product);
// a * b (transposed as `attrs` say) through ComputeProduct.
Output ComputeMatMul(const Scope& scope, const Output& a, const Output& b,
                     const ops::MatMulAttrs& attrs = {});

// Automatic layer names unique within one model: "dense", "dense_1", ... counted per type in the
// order the model first calls its layers. The reference's object-based checkpoints match
// variables by their place in the model rather than by process-wide names; counting per model
// gives the same architecture built twice, in one process or two, the same names, so one restores
// the other's checkpoint. Not thread-safe (one model builds at a time).
class LayerNames {
 public:
  // The next free name for a layer of `default_name`'s type: default_name, default_name_1, ...
  std::string Take(std::string_view default_name);
  // A name a layer was given explicitly: never handed out automatically in this model afterwards.
  void Reserve(const std::string& name) { taken_.insert(name); }

 private:
  std::map<std::string, int, std::less<>> counts_;
  std::set<std::string, std::less<>> taken_;
};

// What a model being built gives its layers (LayerCallContext).
struct LayerCallOptions {
  // The model's random seed (random_seed.h), from which a layer without a seed of its own derives
  // its initializers' and dropout's seeds; nullopt: the global seed, or random every run when
  // none is set.
  std::optional<int64_t> seed = std::nullopt;
  // Where automatic names are counted (the model's; borrowed). Null: per process.
  LayerNames* names = nullptr;
  // The type the layers' matrix products run in (the model's DTypePolicy::compute_dtype).
  DataType compute_dtype = DataType::kFloat;
};

// Installed on the building thread while a model builds one replica's graph (nests; restores the
// previous one when destroyed, so make and destroy it on one thread in reverse order).
class LayerCallContext {
 public:
  explicit LayerCallContext(bool training, LayerCallOptions options = {});
  ~LayerCallContext();
  LayerCallContext(const LayerCallContext&) = delete;
  LayerCallContext& operator=(const LayerCallContext&) = delete;

  // This thread's innermost context; null when none is installed.
  static LayerCallContext* Current();

  bool training() const { return training_; }
  const LayerCallOptions& options() const { return options_; }
  // Ops to run with every training step (a batch normalization's moving statistics).
  void AddUpdate(const Output& update) { updates_.push_back(update); }
  const std::vector<Output>& updates() const { return updates_; }

  struct Call {
    const Layer* layer;
    PartialShape output_shape;
  };
  // Every layer call made in this context, in order (Model::Summary's rows).
  const std::vector<Call>& calls() const { return calls_; }
  void RecordCall(const Layer& layer, const Output& output) {
    calls_.push_back({&layer, output.shape()});
  }

 private:
  bool training_;
  LayerCallOptions options_;
  std::vector<Output> updates_;
  std::vector<Call> calls_;
  LayerCallContext* previous_;
};

class Layer {
 public:
  virtual ~Layer() = default;
  Layer(Layer&&) = default;
  Layer& operator=(Layer&&) = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Builds the layer on `input` in a sub-scope named name(), in training mode when
  // LayerCallContext::Current() says so (inference when there is none). Errors (an input of the
  // wrong rank, say) are recorded in `scope` naming the layer; the returned Output is then empty.
  Output operator()(const Scope& scope, const Output& input);
  Output operator()(const Scope& scope, const Output& input, bool training);

  // The name given, or else an automatic one ("dense", "dense_1", ...) taken on the layer's first
  // call: counted per model when a model builds it (LayerNames), per process otherwise. Before
  // that first call, the type's default name ("dense").
  const std::string& name() const { return name_.empty() ? default_name_ : name_; }
  // The layer's class name, "Dense".
  virtual std::string_view type() const = 0;

  // The variables of replica 0 in the first graph the layer was built in that still exists (the
  // model's own), in creation order; empty before the first call and once that graph is gone.
  std::vector<Variable> variables() const;
  std::vector<Variable> trainable_variables() const;
  std::vector<Variable> non_trainable_variables() const;
  // The number of elements of variables().
  int64_t CountParams() const;
  // The variables of `replica` in `graph` (trainable ones only when `trainable_only`): what a
  // model built there trains.
  std::vector<Variable> VariablesIn(const Graph* graph, int replica, bool trainable_only) const;

 protected:
  // `name` empty: a unique one made from `default_name` ("dense").
  Layer(std::string_view default_name, std::string name);

  // Creates the weights for an input of `input_shape` with AddWeight; called once per replica and
  // graph, before the first Forward there. Errors go to `scope`.
  virtual void Build(const Scope& scope, const PartialShape& input_shape) = 0;
  // The computation; `weights` are this replica's, in the order Build added them.
  virtual Output Forward(const Scope& scope, const Output& input, bool training,
                         const std::vector<Variable>& weights) = 0;

  // A weight of this layer (a variable named "<layer>/<name>"), for Build.
  Variable AddWeight(const Scope& scope, std::string_view name, const TensorShape& shape,
                     const Initializer& initializer, bool trainable = true,
                     const VariableOptions& options = {});
  // Records an InvalidArgument naming this layer in `scope`.
  void Fail(const Scope& scope, std::string_view message) const;
  // The seed of this layer's op or weight `what` ("kernel", "dropout") derived from the model's
  // seed (LayerCallContext's, or the global seed outside a model), or nullopt when there is none
  // (random_seed.h).
  std::optional<int64_t> DerivedSeed(std::string_view what) const;
  // Which call of this layer in the current graph and replica Forward is building (0 for the
  // first): tells apart the ops of the steps a model unrolls (steps_per_execution), so that their
  // random masks differ.
  int call_index() const { return call_index_; }

 private:
  // The weights of one replica in one graph.
  struct Built {
    // Entries of a graph that is gone are dropped before any lookup, so a new graph at the same
    // address never finds them.
    std::weak_ptr<const Graph> owner;
    const Graph* graph;
    int replica;
    std::vector<Variable> weights;
    std::vector<bool> trainable;
    int calls = 0;  // Forward calls made in this graph and replica
  };
  std::vector<Variable> Select(int which) const;  // 0: all, 1: trainable, 2: non-trainable

  std::string default_name_;
  std::string name_;          // empty until an automatic name is taken
  std::vector<Built> built_;  // the last one is being built during Build
  int call_index_ = 0;
};

}  // namespace weft::train
