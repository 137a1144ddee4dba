// Scope: the handle through which C++ code builds a graph. A scope carries a name prefix (nodes
// get unique names like "layer1/MatMul_1"), a requested device and control dependencies, all
// inherited by child scopes. The first error while building is kept in the scope (later ops
// become no-ops) and surfaces from status() or ToGraphDef(), so model code need not check each op:
//
//   Scope root = Scope::NewRootScope();
//   auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
//   auto y = ops::Relu(root, ops::MatMul(root, x, w));
//   WEFT_ASSIGN_OR_RETURN(proto::GraphDef graph, root.ToGraphDef());
//
// Scopes made from one root share the graph, the name table and the error: not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph/graph.h"

namespace weft {

// One tensor of the graph being built: output `index` of `node`. Default-constructed (null node)
// after an error in its scope.
class Output {
 public:
  Output() = default;
  Output(Node* node, int index = 0) : node_(node), index_(index) {}  // NOLINT: implicit

  Node* node() const { return node_; }
  int index() const { return index_; }
  DataType dtype() const {
    return node_ && index_ < node_->num_outputs() ? node_->output_type(index_) : DataType::kInvalid;
  }
  // Inferred when the node was added.
  PartialShape shape() const {
    return node_ && index_ < node_->num_outputs() ? node_->output_shape(index_) : PartialShape();
  }
  // "node" or "node:index": the name to fetch or feed this tensor by.
  std::string name() const;
  explicit operator bool() const { return node_ != nullptr; }

 private:
  Node* node_ = nullptr;
  int index_ = 0;
};

class Scope {
 public:
  // A scope over a new, empty graph with every registered op (or those of `registry`).
  static Scope NewRootScope();
  static Scope NewRootScope(const OpRegistry& registry);

  // Nodes built in the child are named "<prefix>/<child>/..."; the child name is made unique.
  Scope NewSubScope(std::string_view child) const;
  // The same scope with the name prefix of the root scope: nodes built in it are named as if
  // built from the root (device and control dependencies are kept). For objects named after
  // another node rather than after where they are built, such as an optimizer's slot variables
  // ("dense1/kernel/Momentum").
  Scope WithRootNameScope() const;
  // The next node built with the returned scope is named `name` (made unique when taken).
  Scope WithOpName(std::string_view name) const;
  // Requests a device ("/device:CPU:1") for nodes built in the returned scope.
  Scope WithDevice(std::string_view device) const;
  // Nodes built in the returned scope run after `deps` (in addition to this scope's deps).
  Scope WithControlDependencies(const std::vector<Output>& deps) const;
  Scope WithNoControlDependencies() const;

  Graph* graph() const { return state_->graph.get(); }
  std::shared_ptr<Graph> graph_as_shared_ptr() const { return state_->graph; }
  const Status& status() const { return *state_->status; }
  bool ok() const { return state_->status->ok(); }
  // Records an error; the first one is kept.
  void UpdateStatus(const Status& status) const;

  // The graph built so far, or the first error met while building it.
  StatusOr<proto::GraphDef> ToGraphDef() const;

  // A unique node name for an op of `op_type` built in this scope (uses WithOpName's if given).
  std::string GetUniqueNameForOp(std::string_view op_type) const;
  const std::string& device() const { return device_; }
  const std::vector<Node*>& control_dependencies() const { return control_deps_; }

 private:
  struct SharedState {
    std::shared_ptr<Graph> graph;
    std::shared_ptr<Status> status;
    std::shared_ptr<std::map<std::string, int>> name_counts;
  };
  explicit Scope(std::shared_ptr<SharedState> state) : state_(std::move(state)) {}
  std::string MakeUnique(const std::string& name) const;
  std::string Prefixed(std::string_view name) const;

  std::shared_ptr<SharedState> state_;
  std::string prefix_;
  std::string op_name_;
  std::string device_;
  std::vector<Node*> control_deps_;
};

}  // namespace weft
