#include "weft/graph/partition.h"

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "weft/core/str_util.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/node_def_util.h"

namespace weft {
namespace {

// `text` usable inside a node name: ':' and '/' become '_', without a leading '_'.
std::string NamePart(std::string text) {
  for (char& c : text) {
    if (c == ':' || c == '/') c = '_';
  }
  if (!text.empty() && text[0] == '_') text.erase(0, 1);
  return text;
}

// "CPU_1" for "/job:localhost/replica:0/task:0/device:CPU:1"; the whole name when it has no
// "/device:" part.
std::string ShortDeviceName(const std::string& device) {
  constexpr std::string_view kDevice = "/device:";
  size_t at = device.rfind(kDevice);
  return NamePart(at == std::string::npos ? device : device.substr(at + kDevice.size()));
}

std::string TensorName(const Node* node, int output) {
  return output == 0 ? node->name() : StrCat(node->name(), ":", output);
}

// One partitioning run: walks the nodes in id order, copying each into its device's partition and
// creating _Send/_Recv pairs the first time a consumer needs a tensor (or a control signal) from
// another device.
class Partitioner {
 public:
  Partitioner(const PartitionOptions& options, const Graph& graph)
      : options_(options), graph_(graph) {}

  Status Run(std::map<std::string, proto::GraphDef>* partitions) {
    std::map<std::string, int> devices_per_short_name;
    for (const Node* node : graph_.nodes()) {
      const std::string& device = node->assigned_device_name();
      if (device.empty()) {
        return InvalidArgument(FormatNodeForError(node->def()),
                               ": has no assigned device; place the graph before partitioning");
      }
      auto [at, added] = short_names_.emplace(device, ShortDeviceName(device));
      if (added) ++devices_per_short_name[at->second];
    }
    // Devices sharing a short name (e.g. CPU:0 of two tasks) are named in full instead.
    for (auto& [device, short_name] : short_names_) {
      if (devices_per_short_name[short_name] > 1 || short_name.empty()) {
        short_name = NamePart(device);
      }
    }

    for (const Node* node : graph_.nodes()) WEFT_RETURN_IF_ERROR(CopyNode(node));
    *partitions = std::move(partitions_);
    return Status::OK();
  }

 private:
  Status CopyNode(const Node* node) {
    const std::string& device = node->assigned_device_name();
    std::vector<std::string> inputs(node->num_inputs());
    std::vector<std::pair<int, std::string>> local_controls;   // (src id, name)
    std::vector<std::pair<int, std::string>> remote_controls;  // (src id, recv name)
    for (const Edge* edge : node->in_edges()) {
      const Node* src = edge->src;
      bool local = src->assigned_device_name() == device;
      if (edge->IsControlEdge()) {
        if (local) {
          local_controls.emplace_back(src->id(), src->name());
        } else {
          WEFT_ASSIGN_OR_RETURN(std::string recv, RecvFor(edge));
          remote_controls.emplace_back(src->id(), std::move(recv));
        }
      } else if (local) {
        inputs[edge->dst_input] = TensorName(src, edge->src_output);
      } else {
        WEFT_ASSIGN_OR_RETURN(inputs[edge->dst_input], RecvFor(edge));
      }
    }
    int missing = static_cast<int>(std::count(inputs.begin(), inputs.end(), std::string()));
    if (missing > 0) {
      return InvalidArgument(FormatNodeForError(node->def()), ": incomplete graph, missing ",
                             missing, " of ", node->num_inputs(), " data inputs");
    }
    std::sort(local_controls.begin(), local_controls.end());
    std::sort(remote_controls.begin(), remote_controls.end());

    proto::NodeDef* def = partitions_[device].add_node();
    *def = node->def();
    def->clear_input();
    def->set_device(device);
    for (std::string& input : inputs) def->add_input(std::move(input));
    for (const auto& [id, name] : local_controls) def->add_input(StrCat("^", name));
    for (const auto& [id, name] : remote_controls) def->add_input(StrCat("^", name));
    return Status::OK();
  }

  // The name of the _Recv on `edge`'s destination device that stands for the edge's source tensor
  // (or, for a control edge, its source node's completion), creating the pair on first use.
  StatusOr<std::string> RecvFor(const Edge* edge) {
    const Node* src = edge->src;
    const std::string& src_device = src->assigned_device_name();
    const std::string& dst_device = edge->dst->assigned_device_name();
    auto key = std::make_tuple(src->id(), edge->src_output, dst_device);
    auto found = recvs_.find(key);
    if (found != recvs_.end()) return found->second;

    if (!options_.get_incarnation) {
      return InvalidArgument(FormatNodeForError(edge->dst->def()), ": the edge from node '",
                             src->name(), "' crosses from ", src_device, " to ", dst_device,
                             ", but PartitionOptions.get_incarnation is not set");
    }
    const std::string& to = short_names_.at(dst_device);
    std::string tensor_name;
    std::string send_input;
    DataType dtype;
    std::string send_name, recv_name;
    if (edge->IsControlEdge()) {
      // A control signal crosses as an empty float tensor computed after `src`.
      tensor_name = StrCat(options_.edge_name_prefix, "_", edge->id, "_", src->name(), "_ctrl");
      dtype = DataType::kFloat;
      proto::NodeDef* trigger = partitions_[src_device].add_node();
      trigger->set_name(UniqueName(StrCat(src->name(), "/_ctrl_const_to_", to)));
      trigger->set_op("Const");
      trigger->set_device(src_device);
      trigger->add_input(StrCat("^", src->name()));
      (*trigger->mutable_attr())["dtype"] = MakeAttrValue(dtype);
      (*trigger->mutable_attr())["value"] = MakeAttrValue(Tensor(dtype, TensorShape({0})));
      send_input = trigger->name();
      send_name = UniqueName(StrCat(src->name(), "/_ctrl_send_to_", to));
      recv_name = UniqueName(StrCat(src->name(), "/_ctrl_recv_on_", to));
    } else {
      tensor_name =
          StrCat(options_.edge_name_prefix, "_", edge->id, "_", src->name(), "_", edge->src_output);
      dtype = src->output_type(edge->src_output);
      send_input = TensorName(src, edge->src_output);
      send_name = UniqueName(StrCat(src->name(), "/_send_", edge->src_output, "_to_", to));
      recv_name = UniqueName(StrCat(src->name(), "/_recv_", edge->src_output, "_on_", to));
    }
    auto incarnation = static_cast<int64_t>(options_.get_incarnation(src_device));
    auto set_common_attrs = [&](proto::NodeDef* def) {
      auto& attr = *def->mutable_attr();
      attr["tensor_name"] = MakeAttrValue(tensor_name);
      attr["send_device"] = MakeAttrValue(src_device);
      attr["send_device_incarnation"] = MakeAttrValue(incarnation);
      attr["recv_device"] = MakeAttrValue(dst_device);
      attr["client_terminated"] = MakeAttrValue(false);
    };

    proto::NodeDef* send = partitions_[src_device].add_node();
    send->set_name(std::move(send_name));
    send->set_op("_Send");
    send->set_device(src_device);
    send->add_input(std::move(send_input));
    (*send->mutable_attr())["T"] = MakeAttrValue(dtype);
    set_common_attrs(send);

    proto::NodeDef* recv = partitions_[dst_device].add_node();
    recv->set_name(std::move(recv_name));
    recv->set_op("_Recv");
    recv->set_device(dst_device);
    (*recv->mutable_attr())["tensor_type"] = MakeAttrValue(dtype);
    set_common_attrs(recv);

    recvs_.emplace(std::move(key), recv->name());
    return recv->name();
  }

  // `base`, or `base` with the first free suffix "_<n>", avoiding the graph's own node names and
  // every name generated so far.
  std::string UniqueName(const std::string& base) {
    std::string name = base;
    for (int i = 1; graph_.FindNode(name) != nullptr || generated_names_.contains(name); ++i) {
      name = StrCat(base, "_", i);
    }
    generated_names_.insert(name);
    return name;
  }

  const PartitionOptions& options_;
  const Graph& graph_;
  std::map<std::string, proto::GraphDef> partitions_;
  std::map<std::string, std::string> short_names_;  // full device name -> name part
  std::set<std::string> generated_names_;
  // (src node id, src output or kControlSlot, dst device) -> name of the _Recv there.
  std::map<std::tuple<int, int, std::string>, std::string> recvs_;
};

}  // namespace

Status Partition(const PartitionOptions& options, const Graph& graph,
                 std::map<std::string, proto::GraphDef>* partitions) {
  partitions->clear();
  return Partitioner(options, graph).Run(partitions);
}

}  // namespace weft
