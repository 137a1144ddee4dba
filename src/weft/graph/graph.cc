#include "weft/graph/graph.h"

#include <algorithm>

#include "weft/framework/attr_value_util.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/shape_inference.h"

namespace weft {

const Edge* Node::input_edge(int index) const {
  for (const Edge* edge : in_edges_) {
    if (edge->dst_input == index) return edge;
  }
  return nullptr;
}

Graph::Graph(const OpRegistry& registry) : registry_(registry) {}
Graph::~Graph() = default;

void Node::SetOutputHandleShapes(const proto::NodeDef& def,
                                 const std::vector<PartialShape>& input_handle_shapes) {
  // A variable's handle carries its declared shape; ops that pass a handle on keep it.
  output_handle_shapes_.assign(num_outputs(), PartialShape::UnknownRank());
  for (int i = 0; i < num_outputs(); ++i) {
    if (output_types_[i] != DataType::kResource) continue;
    if (def.op() == "VarHandleOp") {
      PartialShape declared;
      if (GetNodeAttr(def, "shape", &declared).ok()) output_handle_shapes_[i] = declared;
    } else if (!input_handle_shapes.empty() && input_types_[0] == DataType::kResource) {
      output_handle_shapes_[i] = input_handle_shapes[0];
    }
  }
}

StatusOr<Node*> Graph::AddNode(proto::NodeDef def, const std::vector<NodeOutput>& inputs,
                               const std::vector<Node*>& control_inputs) {
  if (def.name().empty()) return InvalidArgument("a node of op '", def.op(), "' has no name");
  if (by_name_.contains(def.name())) {
    return InvalidArgument("duplicate node name '", def.name(), "'");
  }
  StatusOr<const OpDef*> op = registry_.LookUp(def.op());
  if (!op.ok()) {
    return NotFound("node '", def.name(), "': op '", def.op(), "' is not registered");
  }
  def.clear_input();
  for (const NodeOutput& input : inputs) {
    WEFT_CHECK(input.node != nullptr);
    def.add_input(input.index == 0 ? input.node->name()
                                   : StrCat(input.node->name(), ":", input.index));
  }
  for (Node* control : control_inputs) def.add_input(StrCat("^", control->name()));
  AddDefaultsToNodeDef(**op, &def);
  WEFT_RETURN_IF_ERROR(ValidateNodeDef(def, **op));

  auto node = std::unique_ptr<Node>(new Node());
  WEFT_RETURN_IF_ERROR(InOutTypesForNode(def, **op, &node->input_types_, &node->output_types_));
  std::vector<PartialShape> input_shapes, input_handle_shapes, input_as_shapes;
  std::vector<const Tensor*> input_values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const NodeOutput& input = inputs[i];
    if (input.index < 0 || input.index >= input.node->num_outputs()) {
      return InvalidArgument(FormatNodeForError(def), ": input ", i, " names output ", input.index,
                             " of node '", input.node->name(), "', which has ",
                             input.node->num_outputs(), " outputs");
    }
    DataType actual = input.node->output_type(input.index);
    if (actual != node->input_types_[i]) {
      return InvalidArgument(FormatNodeForError(def), ": input ", i, " ('", def.input(i), "') is ",
                             DataTypeName(actual), ", but the op expects ",
                             DataTypeName(node->input_types_[i]));
    }
    input_shapes.push_back(input.node->output_shape(input.index));
    input_handle_shapes.push_back(input.node->output_handle_shape(input.index));
    input_as_shapes.push_back(input.index == 0 ? input.node->output_as_shape()
                                               : PartialShape::UnknownRank());
    input_values.push_back(input.node->constant_value_.get());
  }
  if (def.op() == "Const") {
    Tensor value;
    WEFT_RETURN_IF_ERROR(GetNodeAttr(def, "value", &value));
    node->constant_value_ = std::make_unique<Tensor>(std::move(value));
  }
  InferenceContext inference(def, **op, std::move(input_shapes), std::move(input_values),
                             node->num_outputs());
  inference.set_input_handle_shapes(input_handle_shapes);
  if (def.op() == "Shape" && inference.num_inputs() == 1) {
    node->output_as_shape_ = inference.input(0);
  }
  inference.set_input_tensors_as_shapes(std::move(input_as_shapes));
  if ((*op)->shape_fn) {
    WEFT_RETURN_IF_ERROR((*op)->shape_fn(inference));
  }
  node->output_shapes_ = inference.outputs();
  node->SetOutputHandleShapes(def, input_handle_shapes);

  node->id_ = static_cast<int>(nodes_.size());
  node->op_def_ = *op;
  node->def_ = std::move(def);
  Node* added = node.get();
  nodes_.push_back(std::move(node));
  by_name_[added->name()] = added;
  ++num_nodes_;
  for (size_t i = 0; i < inputs.size(); ++i) {
    AddEdgeInternal(inputs[i].node, inputs[i].index, added, static_cast<int>(i));
  }
  for (Node* control : control_inputs) AddControlEdge(control, added);
  return added;
}

const Edge* Graph::AddEdgeInternal(Node* src, int src_output, Node* dst, int dst_input) {
  auto edge = std::make_unique<Edge>();
  edge->id = static_cast<int>(edges_.size());
  edge->src = src;
  edge->src_output = src_output;
  edge->dst = dst;
  edge->dst_input = dst_input;
  const Edge* added = edge.get();
  edges_.push_back(std::move(edge));
  src->out_edges_.push_back(added);
  dst->in_edges_.push_back(added);
  return added;
}

const Edge* Graph::AddControlEdge(Node* src, Node* dst) {
  for (const Edge* edge : dst->in_edges_) {
    if (edge->IsControlEdge() && edge->src == src) return edge;
  }
  return AddEdgeInternal(src, kControlSlot, dst, kControlSlot);
}

Status Graph::ReplaceInput(Node* dst, int dst_input, NodeOutput src) {
  if (dst_input < 0 || dst_input >= dst->num_inputs()) {
    return InvalidArgument("node '", dst->name(), "' has no input ", dst_input);
  }
  if (src.index < 0 || src.index >= src.node->num_outputs()) {
    return InvalidArgument("node '", src.node->name(), "' has no output ", src.index);
  }
  if (src.node->output_type(src.index) != dst->input_type(dst_input)) {
    return InvalidArgument("input ", dst_input, " of node '", dst->name(), "' is ",
                           DataTypeName(dst->input_type(dst_input)), ", but '", src.node->name(),
                           "':", src.index, " is ", DataTypeName(src.node->output_type(src.index)));
  }
  if (const Edge* old = dst->input_edge(dst_input); old != nullptr) RemoveEdge(old);
  AddEdgeInternal(src.node, src.index, dst, dst_input);
  return Status::OK();
}

void Graph::RemoveEdge(const Edge* edge) {
  auto erase = [edge](std::vector<const Edge*>& list) {
    list.erase(std::remove(list.begin(), list.end(), edge), list.end());
  };
  erase(edge->src->out_edges_);
  erase(edge->dst->in_edges_);
  edges_[edge->id].reset();
}

void Graph::RemoveNode(Node* node) {
  std::vector<const Edge*> edges = node->in_edges_;
  edges.insert(edges.end(), node->out_edges_.begin(), node->out_edges_.end());
  for (const Edge* edge : edges) RemoveEdge(edge);
  by_name_.erase(node->name());
  --num_nodes_;
  nodes_[node->id_].reset();
}

Node* Graph::FindNode(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> live;
  live.reserve(num_nodes_);
  for (const auto& node : nodes_) {
    if (node) live.push_back(node.get());
  }
  return live;
}

proto::GraphDef Graph::ToGraphDef() const {
  proto::GraphDef graph_def;
  for (const Node* node : nodes()) {
    proto::NodeDef* def = graph_def.add_node();
    *def = node->def();
    def->clear_input();
    std::vector<const Edge*> data(node->num_inputs(), nullptr);
    std::vector<const Edge*> control;
    for (const Edge* edge : node->in_edges()) {
      if (edge->IsControlEdge()) {
        control.push_back(edge);
      } else {
        data[edge->dst_input] = edge;
      }
    }
    for (const Edge* edge : data) {
      WEFT_CHECK(edge != nullptr) << "node " << node->name() << " lost a data input";
      def->add_input(edge->src_output == 0 ? edge->src->name()
                                           : StrCat(edge->src->name(), ":", edge->src_output));
    }
    std::sort(control.begin(), control.end(),
              [](const Edge* a, const Edge* b) { return a->src->id() < b->src->id(); });
    for (const Edge* edge : control) def->add_input(StrCat("^", edge->src->name()));
  }
  return graph_def;
}

std::vector<std::string> FindCycle(const Graph& graph) {
  // Iterative depth-first search; colour 1 = on the current path, 2 = finished.
  std::vector<int> colour(graph.num_node_ids(), 0);
  std::vector<int> parent(graph.num_node_ids(), -1);
  for (Node* start : graph.nodes()) {
    if (colour[start->id()] != 0) continue;
    std::vector<std::pair<Node*, size_t>> stack = {{start, 0}};
    colour[start->id()] = 1;
    while (!stack.empty()) {
      auto& [node, next_edge] = stack.back();
      if (next_edge == node->out_edges().size()) {
        colour[node->id()] = 2;
        stack.pop_back();
        continue;
      }
      Node* child = node->out_edges()[next_edge++]->dst;
      if (colour[child->id()] == 1) {
        std::vector<std::string> cycle;
        for (Node* at = node; at != child; at = graph.node(parent[at->id()])) {
          cycle.push_back(at->name());
        }
        cycle.push_back(child->name());
        std::reverse(cycle.begin(), cycle.end());
        return cycle;
      }
      if (colour[child->id()] == 0) {
        colour[child->id()] = 1;
        parent[child->id()] = node->id();
        stack.emplace_back(child, 0);
      }
    }
  }
  return {};
}

}  // namespace weft
