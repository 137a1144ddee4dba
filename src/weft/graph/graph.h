// Graph: nodes (each a validated NodeDef with its OpDef, dtypes and inferred output shapes) joined
// by data edges (output -> input) and control edges (ordering only). Nodes are added with their
// inputs already present, so a graph built through AddNode is acyclic; ImportGraphDef checks
// GraphDefs for cycles. Ownership: the Graph owns its Nodes and Edges; pointers stay valid until
// the node or edge is removed. Not thread-safe: build, then share read-only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/framework/op_registry.h"
#include "weft/framework/partial_shape.h"
#include "weft/graph.pb.h"

namespace weft {

class Node;

inline constexpr int kControlSlot = -1;

struct Edge {
  int id = 0;
  Node* src = nullptr;
  int src_output = 0;  // kControlSlot for a control edge
  Node* dst = nullptr;
  int dst_input = 0;  // kControlSlot for a control edge
  bool IsControlEdge() const { return src_output == kControlSlot; }
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return def_.name(); }
  const std::string& type_string() const { return def_.op(); }
  // The NodeDef with defaults filled in. Its `input` field is not kept up to date with edges; use
  // in_edges() (Graph::ToGraphDef rebuilds inputs from edges).
  const proto::NodeDef& def() const { return def_; }
  const OpDef& op_def() const { return *op_def_; }

  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  const std::vector<DataType>& input_types() const { return input_types_; }
  const std::vector<DataType>& output_types() const { return output_types_; }
  // Shapes from shape inference when the node was added.
  const PartialShape& output_shape(int i) const { return output_shapes_[i]; }
  // For a resource output: the shape of the value behind the handle (a variable's declared shape).
  const PartialShape& output_handle_shape(int i) const { return output_handle_shapes_[i]; }
  // For a Shape node: its input's partial shape, which is what is known of the values of its
  // output (InferenceContext::input_tensor_as_shape). Unknown rank for any other node.
  const PartialShape& output_as_shape() const { return output_as_shape_; }

  const std::vector<const Edge*>& in_edges() const { return in_edges_; }
  const std::vector<const Edge*>& out_edges() const { return out_edges_; }
  // The data edge feeding input `index`, or nullptr.
  const Edge* input_edge(int index) const;

  const std::string& requested_device() const { return def_.device(); }
  const std::string& assigned_device_name() const { return assigned_device_name_; }
  void set_assigned_device_name(std::string name) { assigned_device_name_ = std::move(name); }
  void set_requested_device(std::string device) { def_.set_device(std::move(device)); }

 private:
  friend class Graph;
  Node() = default;
  // Sets output_handle_shapes_ once the types are known (def_ is not set yet).
  void SetOutputHandleShapes(const proto::NodeDef& def,
                             const std::vector<PartialShape>& input_handle_shapes);

  int id_ = 0;
  proto::NodeDef def_;
  const OpDef* op_def_ = nullptr;
  std::vector<DataType> input_types_;
  std::vector<DataType> output_types_;
  std::vector<PartialShape> output_shapes_;
  std::vector<PartialShape> output_handle_shapes_;
  PartialShape output_as_shape_ = PartialShape::UnknownRank();
  std::vector<const Edge*> in_edges_;
  std::vector<const Edge*> out_edges_;
  std::string assigned_device_name_;
  std::unique_ptr<Tensor> constant_value_;  // the value of a Const node, for shape inference
};

// One tensor output of a node.
struct NodeOutput {
  Node* node = nullptr;
  int index = 0;
};

class Graph {
 public:
  explicit Graph(const OpRegistry& registry);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const OpRegistry& op_registry() const { return registry_; }

  // Adds a node whose data inputs are `inputs` (in order) and control inputs `control_inputs`.
  // Looks up the op, fills default attrs, validates the attrs, checks the input dtypes and runs
  // shape inference. The NodeDef's own `input` field is ignored and rebuilt from the edges.
  // Every error names the node and its op; on error the graph is unchanged.
  StatusOr<Node*> AddNode(proto::NodeDef def, const std::vector<NodeOutput>& inputs,
                          const std::vector<Node*>& control_inputs = {});

  // Adds a control edge (no-op when it exists). The caller keeps the graph acyclic.
  const Edge* AddControlEdge(Node* src, Node* dst);
  // Makes `src` feed data input `dst_input` of `dst` instead of what fed it. InvalidArgument
  // naming `dst` when it has no such input or `src` is of another dtype; shapes are not inferred
  // again. The caller keeps the graph acyclic.
  Status ReplaceInput(Node* dst, int dst_input, NodeOutput src);
  void RemoveEdge(const Edge* edge);
  // Removes a node and all its edges.
  void RemoveNode(Node* node);

  Node* FindNode(std::string_view name) const;
  // Live nodes in id order.
  std::vector<Node*> nodes() const;
  int num_nodes() const { return num_nodes_; }
  // One past the largest node id ever used (ids of removed nodes are not reused).
  int num_node_ids() const { return static_cast<int>(nodes_.size()); }
  Node* node(int id) const { return nodes_[id].get(); }

  // Exports the graph: nodes in id order (a topological order for graphs built with AddNode),
  // inputs rebuilt from edges (data inputs by input index, then control inputs).
  proto::GraphDef ToGraphDef() const;

 private:
  const Edge* AddEdgeInternal(Node* src, int src_output, Node* dst, int dst_input);

  const OpRegistry& registry_;
  std::vector<std::unique_ptr<Node>> nodes_;  // indexed by id; null once removed
  std::vector<std::unique_ptr<Edge>> edges_;  // indexed by id; null once removed
  std::unordered_map<std::string, Node*> by_name_;
  int num_nodes_ = 0;
};

// Names of nodes on a cycle when `graph`'s edges contain one, else empty. Graphs built only with
// AddNode are acyclic; AddControlEdge can close a cycle.
std::vector<std::string> FindCycle(const Graph& graph);

}  // namespace weft
