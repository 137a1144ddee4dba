#include "weft/graph/graph_def_io.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "weft/framework/node_def_util.h"

namespace weft {
namespace {

struct PendingNode {
  const proto::NodeDef* def = nullptr;
  std::vector<TensorId> inputs;  // parsed inputs, control inputs included
  int unresolved = 0;            // inputs naming nodes of this GraphDef not yet added
  std::vector<int> dependents;   // indexes of pending nodes that read this one
};

// Reports a cycle among nodes that could never be added, walking input links from any of them.
Status CycleError(const std::vector<PendingNode>& pending,
                  const std::unordered_map<std::string_view, int>& index_of,
                  const std::vector<bool>& added) {
  int start = -1;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!added[i]) {
      start = static_cast<int>(i);
      break;
    }
  }
  std::vector<int> position(pending.size(), -1);
  std::vector<int> path;
  int at = start;
  while (position[at] < 0) {
    position[at] = static_cast<int>(path.size());
    path.push_back(at);
    for (const TensorId& input : pending[at].inputs) {
      auto it = index_of.find(input.node);
      if (it != index_of.end() && !added[it->second]) {
        at = it->second;
        break;
      }
    }
  }
  std::vector<std::string> names;
  for (size_t i = position[at]; i < path.size(); ++i) names.push_back(pending[path[i]].def->name());
  std::reverse(names.begin(), names.end());
  return InvalidArgument("graph has a cycle through nodes: ", StrJoin(names, " -> "), " -> ",
                         names.front());
}

}  // namespace

Status ImportGraphDef(const proto::GraphDef& graph_def, Graph* graph) {
  std::vector<PendingNode> pending(graph_def.node_size());
  std::unordered_map<std::string_view, int> index_of;
  for (int i = 0; i < graph_def.node_size(); ++i) {
    const proto::NodeDef& def = graph_def.node(i);
    pending[i].def = &def;
    if (def.name().empty()) return InvalidArgument("node ", i, " of the GraphDef has no name");
    if (!index_of.emplace(def.name(), i).second || graph->FindNode(def.name()) != nullptr) {
      return InvalidArgument("duplicate node name '", def.name(), "'");
    }
  }
  for (int i = 0; i < graph_def.node_size(); ++i) {
    PendingNode& node = pending[i];
    for (const std::string& input : node.def->input()) {
      StatusOr<TensorId> id = ParseTensorName(input);
      if (!id.ok()) return id.status().WithContext(FormatNodeForError(*node.def));
      auto it = index_of.find(id->node);
      if (it != index_of.end()) {
        ++node.unresolved;
        pending[it->second].dependents.push_back(i);
      } else if (graph->FindNode(id->node) == nullptr) {
        return InvalidArgument(FormatNodeForError(*node.def), ": input '", input,
                               "' names no node in the graph");
      }
      node.inputs.push_back(*id);
    }
  }

  // Kahn's algorithm: add a node once every node it reads has been added.
  std::deque<int> ready;
  for (int i = 0; i < graph_def.node_size(); ++i) {
    if (pending[i].unresolved == 0) ready.push_back(i);
  }
  std::vector<bool> added(pending.size(), false);
  size_t added_count = 0;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    const PendingNode& node = pending[i];
    std::vector<NodeOutput> inputs;
    std::vector<Node*> controls;
    for (const TensorId& id : node.inputs) {
      Node* source = graph->FindNode(id.node);
      WEFT_CHECK(source != nullptr);
      if (id.is_control()) {
        controls.push_back(source);
      } else {
        inputs.push_back({source, id.index});
      }
    }
    StatusOr<Node*> result = graph->AddNode(*node.def, inputs, controls);
    if (!result.ok()) return result.status();
    added[i] = true;
    ++added_count;
    for (int dependent : node.dependents) {
      if (--pending[dependent].unresolved == 0) ready.push_back(dependent);
    }
  }
  if (added_count != pending.size()) return CycleError(pending, index_of, added);
  return Status::OK();
}

StatusOr<proto::GraphDef> ParseGraphDef(std::string_view bytes) {
  proto::GraphDef graph_def;
  if (!graph_def.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgument("could not parse ", bytes.size(), " bytes as a GraphDef");
  }
  return graph_def;
}

StatusOr<std::unique_ptr<Graph>> CopyGraph(const Graph& source) {
  auto copy = std::make_unique<Graph>(source.op_registry());
  WEFT_RETURN_IF_ERROR(ImportGraphDef(source.ToGraphDef(), copy.get()));
  for (Node* node : copy->nodes()) {
    node->set_assigned_device_name(source.FindNode(node->name())->assigned_device_name());
  }
  return copy;
}

}  // namespace weft
