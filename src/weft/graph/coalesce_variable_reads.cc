#include "weft/graph/coalesce_variable_reads.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "weft/core/str_util.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/device_name_utils.h"

namespace weft {
namespace {

// "/job:ps/replica:0/task:1" of a device, or "" when it names no task.
std::string TaskOf(const std::string& device) {
  StatusOr<ParsedDeviceName> parsed = ParseDeviceName(device);
  if (!parsed.ok() || !parsed->has_job || !parsed->has_task) return "";
  return StrCat("/job:", parsed->job, "/replica:", parsed->has_replica ? parsed->replica : 0,
                "/task:", parsed->task);
}

// A read that may join others: its handle comes from a node without inputs, its shape is known
// and its dtype one the joining kernels take.
bool Joinable(const Node& read) {
  if (read.type_string() != "ReadVariableOp" || read.assigned_device_name().empty()) return false;
  const DataType dtype = read.output_type(0);
  if (dtype != DataType::kFloat && dtype != DataType::kDouble && dtype != DataType::kInt32 &&
      dtype != DataType::kInt64) {
    return false;
  }
  const Edge* handle = read.input_edge(0);
  return handle != nullptr && handle->src->in_edges().empty() &&
         read.output_shape(0).IsFullyDefined() && !TaskOf(read.assigned_device_name()).empty();
}

std::vector<int> ControlInputIds(const Node& node) {
  std::vector<int> ids;
  for (const Edge* edge : node.in_edges()) {
    if (edge->IsControlEdge()) ids.push_back(edge->src->id());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The reads' edges into one device of another task.
struct Member {
  Node* read;
  std::vector<const Edge*> edges;
};
using GroupKey = std::tuple<std::string, std::string, DataType, std::vector<int>>;

class Builder {
 public:
  explicit Builder(Graph* graph) : graph_(graph) {}

  StatusOr<Node*> Add(const std::string& name, const std::string& op, const std::string& device,
                      std::vector<std::pair<std::string, proto::AttrValue>> attrs,
                      const std::vector<NodeOutput>& inputs) {
    proto::NodeDef def;
    def.set_name(UniqueName(name));
    def.set_op(op);
    def.set_device(device);
    for (auto& [key, value] : attrs) (*def.mutable_attr())[key] = std::move(value);
    WEFT_ASSIGN_OR_RETURN(Node * node, graph_->AddNode(std::move(def), inputs));
    node->set_assigned_device_name(device);
    return node;
  }

  StatusOr<Node*> Constant(const std::string& name, const std::string& device, Tensor value) {
    const DataType dtype = value.dtype();
    return Add(name, "Const", device,
               {{"dtype", MakeAttrValue(dtype)}, {"value", MakeAttrValue(value)}}, {});
  }

 private:
  std::string UniqueName(const std::string& base) const {
    std::string name = base;
    for (int i = 1; graph_->FindNode(name) != nullptr; ++i) name = StrCat(base, "_", i);
    return name;
  }

  Graph* graph_;
};

Status Join(Graph* graph, const std::string& from, const std::string& to, DataType dtype,
            const std::vector<Member>& members) {
  Builder builder(graph);
  const std::string base = StrCat(members[0].read->name(), "/coalesced");
  WEFT_ASSIGN_OR_RETURN(Node * flat_shape, builder.Constant(base + "/flat_shape", from,
                                                            Tensor::FromVector<int64_t>({-1})));
  std::vector<NodeOutput> flat;
  for (const Member& member : members) {
    WEFT_ASSIGN_OR_RETURN(
        Node * reshaped,
        builder.Add(base + "/flat", "Reshape", from,
                    {{"T", MakeAttrValue(dtype)}, {"Tshape", MakeAttrValue(DataType::kInt64)}},
                    {{member.read, 0}, {flat_shape, 0}}));
    flat.push_back({reshaped, 0});
  }
  WEFT_ASSIGN_OR_RETURN(Node * axis, builder.Constant(base + "/axis", from, Tensor::Scalar(0)));
  flat.push_back({axis, 0});
  WEFT_ASSIGN_OR_RETURN(Node * packed,
                        builder.Add(base + "/packed", "ConcatV2", from,
                                    {{"N", MakeAttrValue(static_cast<int64_t>(members.size()))},
                                     {"T", MakeAttrValue(dtype)},
                                     {"Tidx", MakeAttrValue(DataType::kInt32)}},
                                    flat));
  int64_t offset = 0;
  for (const Member& member : members) {
    const PartialShape& shape = member.read->output_shape(0);
    const int64_t size = shape.num_elements();
    WEFT_ASSIGN_OR_RETURN(
        Node * begin, builder.Constant(base + "/begin", to, Tensor::FromVector<int64_t>({offset})));
    WEFT_ASSIGN_OR_RETURN(
        Node * extent, builder.Constant(base + "/size", to, Tensor::FromVector<int64_t>({size})));
    WEFT_ASSIGN_OR_RETURN(Node * piece, builder.Add(base + "/piece", "Slice", to,
                                                    {{"T", MakeAttrValue(dtype)},
                                                     {"Index", MakeAttrValue(DataType::kInt64)}},
                                                    {{packed, 0}, {begin, 0}, {extent, 0}}));
    WEFT_ASSIGN_OR_RETURN(Node * dims, builder.Constant(base + "/shape", to,
                                                        Tensor::FromVector<int64_t>(shape.dims())));
    WEFT_ASSIGN_OR_RETURN(Node * value, builder.Add(base + "/value", "Reshape", to,
                                                    {{"T", MakeAttrValue(dtype)},
                                                     {"Tshape", MakeAttrValue(DataType::kInt64)}},
                                                    {{piece, 0}, {dims, 0}}));
    for (const Edge* edge : member.edges) {
      WEFT_RETURN_IF_ERROR(graph->ReplaceInput(edge->dst, edge->dst_input, {value, 0}));
    }
    offset += size;
  }
  return Status::OK();
}

}  // namespace

StatusOr<int> CoalesceVariableReads(Graph* graph) {
  std::map<GroupKey, std::vector<Member>> groups;
  for (Node* read : graph->nodes()) {
    if (!Joinable(*read)) continue;
    const std::string& from = read->assigned_device_name();
    const std::string from_task = TaskOf(from);
    std::map<std::string, std::vector<const Edge*>> by_destination;
    for (const Edge* edge : read->out_edges()) {
      if (edge->IsControlEdge()) continue;
      const std::string& to = edge->dst->assigned_device_name();
      const std::string to_task = TaskOf(to);
      if (!to_task.empty() && to_task != from_task) by_destination[to].push_back(edge);
    }
    const std::vector<int> controls = ControlInputIds(*read);
    for (auto& [to, edges] : by_destination) {
      groups[{from, to, read->output_type(0), controls}].push_back({read, std::move(edges)});
    }
  }
  int joined = 0;
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    const auto& [from, to, dtype, unused_controls] = key;
    WEFT_RETURN_IF_ERROR(Join(graph, from, to, dtype, members));
    ++joined;
  }
  return joined;
}

}  // namespace weft
