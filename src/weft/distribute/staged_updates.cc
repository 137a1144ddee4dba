#include "weft/distribute/staged_updates.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/distribute/values.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/node_def_util.h"

namespace weft::distribute {
namespace {

proto::NodeDef MakeDef(const std::string& name, const std::string& op, const std::string& device) {
  proto::NodeDef def;
  def.set_name(name);
  def.set_op(op);
  def.set_device(device);
  return def;
}

// The nodes reachable from `from` along in-edges (`forward` false) or out-edges (true), `from`
// included, restricted to `within` when it is not null.
std::set<Node*> Reachable(const std::vector<Node*>& from, bool forward,
                          const std::set<Node*>* within) {
  std::set<Node*> seen(from.begin(), from.end());
  std::vector<Node*> stack = from;
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge* edge : forward ? node->out_edges() : node->in_edges()) {
      Node* next = forward ? edge->dst : edge->src;
      if (within != nullptr && within->count(next) == 0) continue;
      if (seen.insert(next).second) stack.push_back(next);
    }
  }
  return seen;
}

Status NotRewritable(const Node& node, std::string_view why) {
  return FailedPrecondition("exactly-once updates: ", FormatNodeForError(node.def()), " ", why);
}

// The commit side of `step`: its updates, and the nodes that both follow an update and lead to
// one (an optimizer's bookkeeping that reads a variable after the updates and assigns it: Adam's
// powers). Everything there must be new and placed.
StatusOr<std::set<Node*>> CommitSide(Node* step, int first_new_node) {
  const std::set<Node*> step_needs = Reachable({step}, /*forward=*/false, nullptr);
  std::vector<Node*> updates;
  for (Node* node : step_needs) {
    if (IsVariableUpdate(*node)) updates.push_back(node);
  }
  if (updates.empty()) {
    return InvalidArgument("exactly-once updates: step '", step->name(), "' updates no variable");
  }
  const std::set<Node*> after = Reachable(updates, /*forward=*/true, &step_needs);
  const std::set<Node*> before = Reachable(updates, /*forward=*/false, &step_needs);
  std::set<Node*> commit;
  for (Node* node : after) {
    if (before.count(node) > 0) commit.insert(node);
  }
  for (Node* node : commit) {
    if (node->id() < first_new_node) return NotRewritable(*node, "already runs in a session");
    if (node->requested_device().empty()) {
      return NotRewritable(*node, "has no device: each update must be placed with its variable");
    }
  }
  return commit;
}

// One device's share of the commit side and what it needs from the step: its staged tensors
// (each once), the inputs that read them, and the nodes its nodes waited for.
struct Group {
  std::string device;  // canonical
  std::string device_spec;
  std::vector<Node*> nodes;  // in id order
  std::vector<NodeOutput> staged;
  std::map<std::pair<Node*, int>, int> staged_index;
  std::vector<std::pair<Node*, int>> unstaged_inputs;  // (node, input)
  std::vector<Node*> waits_for;
};

// The commit side's nodes by device, in device order, with what crosses into each: data is staged
// (resources excepted: the handles of variables, which the commit reads where they are), control
// waits for the stage instead.
StatusOr<std::vector<Group>> GroupByDevice(const std::set<Node*>& commit, int first_new_node) {
  std::map<std::string, Group> by_device;
  for (Node* node : commit) {
    Group& group = by_device[CanonicalDevice(node->requested_device())];
    group.device_spec = node->requested_device();
    group.nodes.push_back(node);
    for (const Edge* edge : node->in_edges()) {
      if (commit.count(edge->src) > 0) continue;
      if (edge->IsControlEdge()) {
        group.waits_for.push_back(edge->src);
      } else if (node->input_type(edge->dst_input) == DataType::kResource) {
        if (!edge->src->in_edges().empty()) {
          return NotRewritable(*node, StrCat("reads resource '", edge->src->name(),
                                             "', which is computed: only a variable's own handle "
                                             "can be read at the commit"));
        }
      } else {
        const std::pair<Node*, int> source = {edge->src, edge->src_output};
        if (group.staged_index.emplace(source, static_cast<int>(group.staged.size())).second) {
          group.staged.push_back({edge->src, edge->src_output});
        }
        group.unstaged_inputs.emplace_back(node, edge->dst_input);
      }
    }
    for (const Edge* edge : node->out_edges()) {
      if (commit.count(edge->dst) > 0) continue;
      if (!edge->IsControlEdge()) {
        return NotRewritable(*node, StrCat("has its output read by '", edge->dst->name(),
                                           "', so it cannot wait for the commit"));
      }
      if (edge->dst->id() < first_new_node) {
        return NotRewritable(*edge->dst, "waits for an update but already runs in a session");
      }
    }
  }
  std::vector<Group> groups;
  for (auto& [device, group] : by_device) {
    group.device = device;
    std::sort(group.nodes.begin(), group.nodes.end(),
              [](const Node* a, const Node* b) { return a->id() < b->id(); });
    groups.push_back(std::move(group));
  }
  return groups;
}

// Adds `group`'s stage (fed `step_commit_id`), its commit id, unstage, discard and commit nodes
// named `name`/..., and cuts the group's nodes off the step: they read the unstaged values and
// wait for nothing of it, and what waited for them waits for the stage.
StatusOr<StagedUpdateGroup> RewriteGroup(Graph& graph, const std::string& name,
                                         const std::set<Node*>& commit, NodeOutput step_commit_id,
                                         const Group& group) {
  std::vector<NodeOutput> values = {step_commit_id};
  std::vector<DataType> dtypes;
  for (const NodeOutput& value : group.staged) {
    values.push_back(value);
    dtypes.push_back(value.node->output_type(value.index));
  }
  proto::NodeDef stage = MakeDef(name + "/stage", "_StageTensors", group.device_spec);
  (*stage.mutable_attr())["stage"] = MakeAttrValue(name);
  (*stage.mutable_attr())["dtypes"] = MakeAttrValue(dtypes);
  WEFT_ASSIGN_OR_RETURN(Node * stage_node, graph.AddNode(stage, values, group.waits_for));
  proto::NodeDef commit_id = MakeDef(name + "/commit_id", "Placeholder", group.device_spec);
  *commit_id.mutable_attr() = step_commit_id.node->def().attr();
  WEFT_ASSIGN_OR_RETURN(Node * commit_id_node, graph.AddNode(commit_id, {}));
  proto::NodeDef unstage = MakeDef(name + "/unstage", "_UnstageTensors", group.device_spec);
  *unstage.mutable_attr() = stage.attr();
  WEFT_ASSIGN_OR_RETURN(Node * unstage_node, graph.AddNode(unstage, {{commit_id_node, 0}}));
  proto::NodeDef discard = MakeDef(name + "/discard", "_DiscardStagedTensors", group.device_spec);
  (*discard.mutable_attr())["stage"] = MakeAttrValue(name);
  WEFT_ASSIGN_OR_RETURN(Node * discard_node, graph.AddNode(discard, {{commit_id_node, 0}}));

  for (const auto& [node, input] : group.unstaged_inputs) {
    const Edge* edge = node->input_edge(input);
    const int k = group.staged_index.at({edge->src, edge->src_output});
    WEFT_RETURN_IF_ERROR(graph.ReplaceInput(node, input, {unstage_node, k}));
  }
  for (Node* node : group.nodes) {
    std::vector<const Edge*> cut;
    for (const Edge* edge : node->in_edges()) {
      if (edge->IsControlEdge() && commit.count(edge->src) == 0) cut.push_back(edge);
    }
    for (const Edge* edge : node->out_edges()) {
      if (commit.count(edge->dst) == 0) {
        graph.AddControlEdge(stage_node, edge->dst);
        cut.push_back(edge);
      }
    }
    for (const Edge* edge : cut) graph.RemoveEdge(edge);
  }
  WEFT_ASSIGN_OR_RETURN(
      Node * commit_node,
      graph.AddNode(MakeDef(name + "/commit", "NoOp", group.device_spec), {}, group.nodes));
  return StagedUpdateGroup{.device = group.device,
                           .commit_id = commit_id_node->name(),
                           .commit = commit_node->name(),
                           .discard = discard_node->name()};
}

}  // namespace

bool IsVariableUpdate(const Node& node) {
  const std::string& op = node.type_string();
  return op.starts_with("ResourceApply") || op.starts_with("ResourceSparseApply") ||
         op == "AssignVariableOp" || op == "AssignAddVariableOp" || op == "AssignSubVariableOp";
}

StatusOr<StagedUpdates> StageUpdates(Graph& graph, const std::string& step, int first_new_node,
                                     const std::string& prefix) {
  Node* step_node = graph.FindNode(step);
  if (step_node == nullptr) return InvalidArgument("exactly-once updates: no step '", step, "'");
  WEFT_ASSIGN_OR_RETURN(const std::set<Node*> commit, CommitSide(step_node, first_new_node));
  WEFT_ASSIGN_OR_RETURN(std::vector<Group> groups, GroupByDevice(commit, first_new_node));
  StagedUpdates staged;
  proto::NodeDef commit_id = MakeDef(prefix + "/commit_id", "Placeholder", "");
  (*commit_id.mutable_attr())["dtype"] = MakeAttrValue(DataType::kInt64);
  (*commit_id.mutable_attr())["shape"] = MakeAttrValue(PartialShape({}));
  WEFT_ASSIGN_OR_RETURN(Node * step_commit_id, graph.AddNode(commit_id, {}));
  staged.commit_id = step_commit_id->name();
  for (size_t g = 0; g < groups.size(); ++g) {
    WEFT_ASSIGN_OR_RETURN(
        StagedUpdateGroup rewritten,
        RewriteGroup(graph, StrCat(prefix, "/", g), commit, {step_commit_id, 0}, groups[g]));
    staged.groups.push_back(std::move(rewritten));
  }
  return staged;
}

}  // namespace weft::distribute
