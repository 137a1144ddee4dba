#include "weft/graph/gradients/gradients.h"

#include <deque>
#include <map>

#include "weft/graph/builder/ops.h"

namespace weft {
namespace {

using TensorKey = std::pair<int, int>;  // (node id, output index)

// Nodes that lie on some data path from a node of `xs` to a node of `ys`.
std::vector<bool> NodesOnPaths(const Graph& graph, const std::vector<Output>& ys,
                               const std::vector<Output>& xs) {
  std::vector<bool> from_x(graph.num_node_ids(), false), to_y(graph.num_node_ids(), false);
  std::deque<Node*> queue;
  for (const Output& x : xs) {
    if (!from_x[x.node()->id()]) {
      from_x[x.node()->id()] = true;
      queue.push_back(x.node());
    }
  }
  while (!queue.empty()) {
    Node* node = queue.front();
    queue.pop_front();
    for (const Edge* edge : node->out_edges()) {
      if (!edge->IsControlEdge() && !from_x[edge->dst->id()]) {
        from_x[edge->dst->id()] = true;
        queue.push_back(edge->dst);
      }
    }
  }
  for (const Output& y : ys) {
    if (!to_y[y.node()->id()]) {
      to_y[y.node()->id()] = true;
      queue.push_back(y.node());
    }
  }
  while (!queue.empty()) {
    Node* node = queue.front();
    queue.pop_front();
    for (const Edge* edge : node->in_edges()) {
      if (!edge->IsControlEdge() && !to_y[edge->src->id()]) {
        to_y[edge->src->id()] = true;
        queue.push_back(edge->src);
      }
    }
  }
  std::vector<bool> on_path(graph.num_node_ids(), false);
  for (int i = 0; i < graph.num_node_ids(); ++i) on_path[i] = from_x[i] && to_y[i];
  return on_path;
}

// Sums the gradients collected for one tensor (nothing, one, or an AddN of several).
Output SumGradients(const Scope& scope, const std::vector<Output>& grads) {
  if (grads.empty()) return Output();
  if (grads.size() == 1) return grads[0];
  return ops::AddN(scope, grads);
}

Status CheckGradientArguments(const std::vector<Output>& ys, const std::vector<Output>& xs,
                              const std::vector<Output>& grad_ys) {
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    return InvalidArgument("AddSymbolicGradients got ", grad_ys.size(), " grad_ys for ", ys.size(),
                           " ys");
  }
  for (const Output& t : ys) {
    if (!t) return InvalidArgument("AddSymbolicGradients: a y is an empty Output");
  }
  for (const Output& t : xs) {
    if (!t) return InvalidArgument("AddSymbolicGradients: an x is an empty Output");
  }
  return Status::OK();
}

// For each node on a path, how many consumers of its outputs on a path it waits for: a node is
// ready once every one of them has sent its gradients.
std::vector<int> PendingConsumers(const Graph& graph, const std::vector<bool>& on_path) {
  std::vector<int> pending(graph.num_node_ids(), 0);
  for (Node* node : graph.nodes()) {
    if (!on_path[node->id()]) continue;
    for (const Edge* edge : node->in_edges()) {
      if (!edge->IsControlEdge() && on_path[edge->src->id()]) ++pending[edge->src->id()];
    }
  }
  return pending;
}

bool HasDataInputOnPath(const Node* node, const std::vector<bool>& on_path) {
  bool has_path_input = false;
  for (const Edge* edge : node->in_edges()) {
    has_path_input |= !edge->IsControlEdge() && on_path[edge->src->id()];
  }
  return has_path_input;
}

// The gradients of `node`'s inputs, from the gradients of its outputs, by its registered gradient
// function; *grad_inputs stays empty when that function is null (nothing flows back).
Status CallGradientFunction(const Scope& grad_scope, const GradientRegistry& registry, Node* node,
                            const std::vector<Output>& grad_outputs,
                            std::vector<Output>* grad_inputs) {
  StatusOr<const GradFunc*> fn = registry.Lookup(node->type_string());
  if (IsNotFound(fn.status())) {
    return InvalidArgument("no gradient is registered for op '", node->type_string(), "' of node '",
                           node->name(), "', which lies on a path from the xs to the ys");
  }
  if (!fn.ok()) {
    return fn.status().WithContext(
        StrCat("node '", node->name(), "', which lies on a path from the xs to the ys"));
  }
  if (!**fn) return Status::OK();
  // A node placed explicitly has its gradient computed beside it (the reference's gradients
  // colocated with their ops): a lookup's rows gathered on a parameter server get their
  // gradients cut there, rather than cut where the loss is and sent piece by piece.
  Scope scope = grad_scope.NewSubScope(node->name() + "_grad");
  const std::string& device = node->requested_device();
  if (!device.empty() && device != grad_scope.device()) scope = scope.WithDevice(device);
  Status status = (**fn)(scope, node, grad_outputs, grad_inputs);
  if (!status.ok()) {
    return status.WithContext(
        StrCat("gradient of node '", node->name(), "' (", node->type_string(), ")"));
  }
  WEFT_RETURN_IF_ERROR(grad_scope.status());
  if (grad_inputs->size() != static_cast<size_t>(node->num_inputs())) {
    return Internal("gradient of node '", node->name(), "' returned ", grad_inputs->size(),
                    " gradients for ", node->num_inputs(), " inputs");
  }
  return Status::OK();
}

}  // namespace

Status AddSymbolicGradients(const Scope& scope, const GradientRegistry& registry,
                            const std::vector<Output>& ys, const std::vector<Output>& xs,
                            const std::vector<Output>& grad_ys, std::vector<Output>* grad_xs) {
  WEFT_RETURN_IF_ERROR(scope.status());
  WEFT_RETURN_IF_ERROR(CheckGradientArguments(ys, xs, grad_ys));
  const Graph& graph = *scope.graph();
  Scope grad_scope = scope.NewSubScope("gradients");
  std::vector<bool> on_path = NodesOnPaths(graph, ys, xs);

  std::vector<int> pending = PendingConsumers(graph, on_path);
  std::map<TensorKey, std::vector<Output>> collected;
  for (size_t i = 0; i < ys.size(); ++i) {
    Output grad = grad_ys.empty() ? ops::OnesLike(grad_scope, ys[i]) : grad_ys[i];
    collected[{ys[i].node()->id(), ys[i].index()}].push_back(grad);
  }
  std::deque<Node*> ready;
  std::vector<bool> queued(graph.num_node_ids(), false);
  for (const Output& y : ys) {
    if (on_path[y.node()->id()] && pending[y.node()->id()] == 0 && !queued[y.node()->id()]) {
      queued[y.node()->id()] = true;
      ready.push_back(y.node());
    }
  }
  // Summed gradient of each x's tensor, kept before the x's node is itself differentiated.
  std::map<TensorKey, Output> summed;
  while (!ready.empty()) {
    Node* node = ready.front();
    ready.pop_front();
    std::vector<Output> grad_outputs(node->num_outputs());
    bool any = false;
    for (int i = 0; i < node->num_outputs(); ++i) {
      auto it = collected.find({node->id(), i});
      if (it == collected.end()) continue;
      grad_outputs[i] = SumGradients(grad_scope, it->second);
      summed[{node->id(), i}] = grad_outputs[i];
      any = true;
    }
    WEFT_RETURN_IF_ERROR(grad_scope.status());
    // Inputs of this node on a path still wait for it, even when it passes nothing back.
    std::vector<Output> grad_inputs;
    if (any && node->num_inputs() > 0 && HasDataInputOnPath(node, on_path)) {
      WEFT_RETURN_IF_ERROR(
          CallGradientFunction(grad_scope, registry, node, grad_outputs, &grad_inputs));
    }
    for (const Edge* edge : node->in_edges()) {
      if (edge->IsControlEdge() || !on_path[edge->src->id()]) continue;
      if (!grad_inputs.empty() && grad_inputs[edge->dst_input]) {
        collected[{edge->src->id(), edge->src_output}].push_back(grad_inputs[edge->dst_input]);
      }
      if (--pending[edge->src->id()] == 0 && !queued[edge->src->id()]) {
        queued[edge->src->id()] = true;
        ready.push_back(edge->src);
      }
    }
  }

  grad_xs->clear();
  for (const Output& x : xs) {
    auto it = summed.find({x.node()->id(), x.index()});
    if (it != summed.end() && it->second) {
      grad_xs->push_back(it->second);
    } else {
      grad_xs->push_back(ops::ZerosLike(grad_scope, x));
    }
  }
  return grad_scope.status();
}

Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& ys,
                            const std::vector<Output>& xs, const std::vector<Output>& grad_ys,
                            std::vector<Output>* grad_xs) {
  return AddSymbolicGradients(scope, AllGradients(), ys, xs, grad_ys, grad_xs);
}

Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& ys,
                            const std::vector<Output>& xs, std::vector<Output>* grad_xs) {
  return AddSymbolicGradients(scope, AllGradients(), ys, xs, {}, grad_xs);
}

const GradientRegistry& AllGradients() {
  static const GradientRegistry* const registry = [] {
    auto* r = new GradientRegistry();
    RegisterArrayGradients(*r);
    RegisterMathGradients(*r);
    RegisterNnGradients(*r);
    return r;
  }();
  return *registry;
}

}  // namespace weft
