#include "weft/graph/prune.h"

#include <map>
#include <set>

#include "weft/framework/attr_value_util.h"
#include "weft/framework/node_def_util.h"

namespace weft {
namespace {

struct ResolvedTensor {
  Node* node = nullptr;
  int index = 0;
};

StatusOr<ResolvedTensor> ResolveTensor(const Graph& graph, const std::string& name,
                                       std::string_view role) {
  StatusOr<TensorId> id = ParseTensorName(name);
  if (!id.ok() || id->is_control()) {
    return InvalidArgument(role, " '", name, "' is not a tensor name (\"node\" or \"node:index\")");
  }
  Node* node = graph.FindNode(id->node);
  if (node == nullptr) return NotFound(role, " '", name, "' names no node in the graph");
  if (id->index >= node->num_outputs()) {
    return InvalidArgument(role, " '", name, "' names output ", id->index, ", but node '",
                           node->name(), "' (", node->type_string(), ") has ", node->num_outputs(),
                           " outputs");
  }
  return ResolvedTensor{node, id->index};
}

// A name used neither in `graph` nor in `step`, starting from `base`.
std::string UniqueName(const Graph& graph, const Graph& step, const std::string& base) {
  std::string name = base;
  for (int i = 1; graph.FindNode(name) != nullptr || step.FindNode(name) != nullptr; ++i) {
    name = StrCat(base, "_", i);
  }
  return name;
}

const std::string& DeviceOf(const Node* node) {
  return node->assigned_device_name().empty() ? node->requested_device()
                                              : node->assigned_device_name();
}

// Copies the part of a graph that one step needs into a new graph: _Arg nodes for the feeds, the
// needed nodes, _Retval nodes for the fetches. Each step uses what the ones before made.
class StepGraphBuilder {
 public:
  // `signature` must have passed ValidateStepSignature.
  StepGraphBuilder(const Graph& graph, const StepSignature& signature)
      : graph_(graph),
        step_(std::make_unique<Graph>(graph.op_registry())),
        copy_of_(graph.num_node_ids(), nullptr) {
    for (size_t i = 0; i < signature.feeds.size(); ++i) {
      feeds_.push_back(ResolveTensor(graph, signature.feeds[i], "feed").value());
      feed_index_[{feeds_.back().node->id(), feeds_.back().index}] = static_cast<int>(i);
    }
    for (const std::string& fetch : signature.fetches) {
      fetches_.push_back(ResolveTensor(graph, fetch, "fetch").value());
    }
  }

  // The nodes the fetches and `targets` need: a walk backwards from them that stops at fed
  // tensors.
  std::vector<bool> NeededNodes(const std::vector<std::string>& targets) const;
  // One _Arg per feed, in the feeds' order (its "index").
  Status AddArgs();
  // A copy of each needed node, its inputs taken from the copies and the _Args.
  Status CopyNodes(const std::vector<bool>& needed);
  // One _Retval per fetch, in the fetches' order (its "index").
  Status AddRetvals();

  std::unique_ptr<Graph> TakeStepGraph() { return std::move(step_); }

 private:
  // Where the step graph finds output `index` of `node` of the graph: an _Arg, or the copy.
  NodeOutput SourceOf(Node* node, int index) const {
    auto it = feed_index_.find({node->id(), index});
    if (it != feed_index_.end()) return {args_[it->second], 0};
    return {copy_of_[node->id()], index};
  }

  const Graph& graph_;
  std::unique_ptr<Graph> step_;
  std::map<std::pair<int, int>, int> feed_index_;  // (node id, output) -> argument index
  std::vector<ResolvedTensor> feeds_, fetches_;
  std::vector<Node*> args_;     // by argument index
  std::vector<Node*> copy_of_;  // by node id of the graph
};

std::vector<bool> StepGraphBuilder::NeededNodes(const std::vector<std::string>& targets) const {
  std::vector<bool> needed(graph_.num_node_ids(), false);
  std::vector<Node*> stack;
  auto need = [&](Node* node) {
    if (!needed[node->id()]) {
      needed[node->id()] = true;
      stack.push_back(node);
    }
  };
  for (const ResolvedTensor& fetch : fetches_) {
    if (!feed_index_.contains({fetch.node->id(), fetch.index})) need(fetch.node);
  }
  for (const std::string& target : targets) need(graph_.FindNode(target));
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge* edge : node->in_edges()) {
      if (!edge->IsControlEdge() && feed_index_.contains({edge->src->id(), edge->src_output})) {
        continue;
      }
      need(edge->src);
    }
  }
  return needed;
}

Status StepGraphBuilder::AddArgs() {
  for (size_t i = 0; i < feeds_.size(); ++i) {
    const ResolvedTensor& feed = feeds_[i];
    proto::NodeDef def;
    def.set_name(UniqueName(graph_, *step_, StrCat("_arg_", feed.node->name(), "_", feed.index)));
    def.set_op("_Arg");
    def.set_device(DeviceOf(feed.node));
    (*def.mutable_attr())["T"] = MakeAttrValue(feed.node->output_type(feed.index));
    (*def.mutable_attr())["index"] = MakeAttrValue(static_cast<int64_t>(i));
    (*def.mutable_attr())["shape"] = MakeAttrValue(feed.node->output_shape(feed.index));
    WEFT_ASSIGN_OR_RETURN(Node * arg, step_->AddNode(std::move(def), {}));
    arg->set_assigned_device_name(feed.node->assigned_device_name());
    args_.push_back(arg);
  }
  return Status::OK();
}

Status StepGraphBuilder::CopyNodes(const std::vector<bool>& needed) {
  // Node ids follow insertion order, which is a topological order of `graph`.
  for (Node* node : graph_.nodes()) {
    if (!needed[node->id()]) continue;
    std::vector<NodeOutput> inputs(node->num_inputs());
    std::vector<Node*> controls;
    for (const Edge* edge : node->in_edges()) {
      if (edge->IsControlEdge()) {
        WEFT_CHECK(copy_of_[edge->src->id()] != nullptr);
        controls.push_back(copy_of_[edge->src->id()]);
      } else {
        inputs[edge->dst_input] = SourceOf(edge->src, edge->src_output);
        WEFT_CHECK(inputs[edge->dst_input].node != nullptr)
            << "input of " << node->name() << " not copied before it";
      }
    }
    WEFT_ASSIGN_OR_RETURN(Node * copy, step_->AddNode(node->def(), inputs, controls));
    copy->set_assigned_device_name(node->assigned_device_name());
    copy_of_[node->id()] = copy;
  }
  return Status::OK();
}

Status StepGraphBuilder::AddRetvals() {
  for (size_t i = 0; i < fetches_.size(); ++i) {
    const ResolvedTensor& fetch = fetches_[i];
    proto::NodeDef def;
    def.set_name(
        UniqueName(graph_, *step_, StrCat("_retval_", fetch.node->name(), "_", fetch.index)));
    def.set_op("_Retval");
    def.set_device(DeviceOf(fetch.node));
    (*def.mutable_attr())["T"] = MakeAttrValue(fetch.node->output_type(fetch.index));
    (*def.mutable_attr())["index"] = MakeAttrValue(static_cast<int64_t>(i));
    WEFT_ASSIGN_OR_RETURN(Node * retval,
                          step_->AddNode(std::move(def), {SourceOf(fetch.node, fetch.index)}));
    retval->set_assigned_device_name(fetch.node->assigned_device_name());
  }
  return Status::OK();
}

// `names` as <length>:<name> items joined by ",": a length read first says where each name ends,
// so no name can pass for a separator.
void AppendNames(const std::vector<std::string>& names, std::string* key) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) key->push_back(',');
    key->append(std::to_string(names[i].size())).append(":").append(names[i]);
  }
}

}  // namespace

std::string StepSignatureKey(const StepSignature& signature) {
  std::string key;
  AppendNames(signature.feeds, &key);
  key.append("->");
  AppendNames(signature.fetches, &key);
  key.push_back('/');
  AppendNames(signature.targets, &key);
  return key;
}

Status ValidateStepSignature(const Graph& graph, const StepSignature& signature) {
  std::set<std::pair<int, int>> fed;
  for (const std::string& feed : signature.feeds) {
    WEFT_ASSIGN_OR_RETURN(ResolvedTensor tensor, ResolveTensor(graph, feed, "feed"));
    if (!fed.emplace(tensor.node->id(), tensor.index).second) {
      return InvalidArgument("feed '", feed, "' names a tensor that is fed twice");
    }
  }
  for (const std::string& fetch : signature.fetches) {
    WEFT_RETURN_IF_ERROR(ResolveTensor(graph, fetch, "fetch").status());
  }
  for (const std::string& target : signature.targets) {
    if (graph.FindNode(target) == nullptr) {
      return NotFound("target '", target, "' names no node in the graph");
    }
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<Graph>> BuildStepGraph(const Graph& graph,
                                                const StepSignature& signature) {
  WEFT_RETURN_IF_ERROR(ValidateStepSignature(graph, signature));
  StepGraphBuilder builder(graph, signature);
  const std::vector<bool> needed = builder.NeededNodes(signature.targets);
  WEFT_RETURN_IF_ERROR(builder.AddArgs());
  WEFT_RETURN_IF_ERROR(builder.CopyNodes(needed));
  WEFT_RETURN_IF_ERROR(builder.AddRetvals());
  return builder.TakeStepGraph();
}

}  // namespace weft
