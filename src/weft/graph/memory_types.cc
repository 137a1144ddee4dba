#include "weft/graph/memory_types.h"

#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "weft/framework/attr_value_util.h"
#include "weft/framework/node_def_util.h"

namespace weft {
namespace {

struct NodeInfo {
  std::vector<MemoryType> inputs;
  std::vector<MemoryType> outputs;
  std::vector<DataType> output_types;
};

// A data input "src:k" resolved to the producing node's index in the partition.
struct Input {
  int src = -1;
  int output = 0;
};

class MemoryTypeRewriter {
 public:
  MemoryTypeRewriter(const OpRegistry& ops, const std::string& device, uint64_t incarnation,
                     proto::GraphDef* partition)
      : ops_(ops), device_(device), incarnation_(incarnation), partition_(*partition) {}

  Status Run() {
    const int num_nodes = partition_.node_size();
    for (int i = 0; i < num_nodes; ++i) {
      const proto::NodeDef& node = partition_.node(i);
      index_.emplace(node.name(), i);
      names_.insert(node.name());
    }
    infos_.resize(num_nodes);
    inputs_.resize(num_nodes);
    for (int i = 0; i < num_nodes; ++i) WEFT_RETURN_IF_ERROR(Analyze(i));
    for (int i = 0; i < num_nodes; ++i) {
      for (const Input& input : inputs_[i]) {
        if (input.output >= static_cast<int>(infos_[input.src].outputs.size())) {
          return InvalidArgument(FormatNodeForError(partition_.node(i)), ": input ",
                                 partition_.node(input.src).name(), ":", input.output,
                                 " names an output its producer does not have");
        }
      }
    }
    SwitchPartitionerEnds();
    for (int i = 0; i < num_nodes; ++i) {
      for (size_t j = 0; j < inputs_[i].size(); ++j) {
        const Input& input = inputs_[i][j];
        const MemoryType have = infos_[input.src].outputs[input.output];
        const MemoryType want = infos_[i].inputs[j];
        if (have != want) {
          *partition_.mutable_node(i)->mutable_input(static_cast<int>(j)) =
              RecvFor(input, have, want);
        }
      }
    }
    for (proto::NodeDef& node : added_) *partition_.add_node() = std::move(node);
    return Status::OK();
  }

 private:
  Status Analyze(int i) {
    const proto::NodeDef& node = partition_.node(i);
    WEFT_ASSIGN_OR_RETURN(const OpDef* op, ops_.LookUp(node.op()));
    proto::NodeDef defaulted = node;
    AddDefaultsToNodeDef(*op, &defaulted);
    NodeInfo& info = infos_[i];
    WEFT_RETURN_IF_ERROR(MemoryTypesForNode(defaulted, *op, &info.inputs, &info.outputs));
    std::vector<DataType> input_types;
    WEFT_RETURN_IF_ERROR(InOutTypesForNode(defaulted, *op, &input_types, &info.output_types));
    for (const std::string& name : node.input()) {
      WEFT_ASSIGN_OR_RETURN(TensorId id, ParseTensorName(name));
      if (id.is_control()) continue;
      auto src = index_.find(std::string(id.node));
      if (src == index_.end()) {
        return InvalidArgument(FormatNodeForError(node), ": input '", name,
                               "' is not a node of the partition of ", device_);
      }
      inputs_[i].push_back({src->second, id.index});
    }
    if (inputs_[i].size() != info.inputs.size()) {
      return InvalidArgument(FormatNodeForError(node), " has ", inputs_[i].size(),
                             " data inputs, but its op takes ", info.inputs.size());
    }
    return Status::OK();
  }

  // _Recv whose consumers all want host memory becomes _HostRecv; then _Send of a tensor in host
  // memory becomes _HostSend (its input may be such a _HostRecv).
  void SwitchPartitionerEnds() {
    const int num_nodes = static_cast<int>(infos_.size());
    std::vector<int> host_consumers(num_nodes, 0), device_consumers(num_nodes, 0);
    for (int i = 0; i < num_nodes; ++i) {
      for (size_t j = 0; j < inputs_[i].size(); ++j) {
        int src = inputs_[i][j].src;
        (infos_[i].inputs[j] == MemoryType::kHost ? host_consumers : device_consumers)[src]++;
      }
    }
    for (int i = 0; i < num_nodes; ++i) {
      proto::NodeDef* node = partition_.mutable_node(i);
      if (node->op() == "_Recv" && host_consumers[i] > 0 && device_consumers[i] == 0) {
        node->set_op("_HostRecv");
        infos_[i].outputs[0] = MemoryType::kHost;
      }
    }
    for (int i = 0; i < num_nodes; ++i) {
      proto::NodeDef* node = partition_.mutable_node(i);
      if (node->op() != "_Send") continue;
      const Input& input = inputs_[i][0];
      if (infos_[input.src].outputs[input.output] == MemoryType::kHost) {
        node->set_op("_HostSend");
        infos_[i].inputs[0] = MemoryType::kHost;
      }
    }
  }

  // The name of the _Recv that delivers `input` in memory `want`, creating the pair on first use.
  std::string RecvFor(const Input& input, MemoryType have, MemoryType want) {
    auto key = std::make_tuple(input.src, input.output, want);
    auto found = recvs_.find(key);
    if (found != recvs_.end()) return found->second;
    const std::string& src = partition_.node(input.src).name();
    const char* to = want == MemoryType::kHost ? "host" : "device";
    const std::string tensor_name = StrCat("memory_", src, "_", input.output, "_to_", to);
    auto set_common_attrs = [&](proto::NodeDef* def) {
      auto& attr = *def->mutable_attr();
      attr["tensor_name"] = MakeAttrValue(tensor_name);
      attr["send_device"] = MakeAttrValue(device_);
      attr["send_device_incarnation"] = MakeAttrValue(static_cast<int64_t>(incarnation_));
      attr["recv_device"] = MakeAttrValue(device_);
      attr["client_terminated"] = MakeAttrValue(false);
      def->set_device(device_);
    };
    const DataType dtype = infos_[input.src].output_types[input.output];
    proto::NodeDef& send = added_.emplace_back();
    send.set_name(UniqueName(StrCat(src, "/_memory_send_", input.output, "_to_", to)));
    send.set_op(have == MemoryType::kHost ? "_HostSend" : "_Send");
    send.add_input(input.output == 0 ? src : StrCat(src, ":", input.output));
    (*send.mutable_attr())["T"] = MakeAttrValue(dtype);
    set_common_attrs(&send);
    proto::NodeDef& recv = added_.emplace_back();
    recv.set_name(UniqueName(StrCat(src, "/_memory_recv_", input.output, "_to_", to)));
    recv.set_op(want == MemoryType::kHost ? "_HostRecv" : "_Recv");
    (*recv.mutable_attr())["tensor_type"] = MakeAttrValue(dtype);
    set_common_attrs(&recv);
    recvs_.emplace(key, recv.name());
    return recv.name();
  }

  std::string UniqueName(const std::string& base) {
    std::string name = base;
    for (int i = 1; names_.contains(name); ++i) name = StrCat(base, "_", i);
    names_.insert(name);
    return name;
  }

  const OpRegistry& ops_;
  const std::string& device_;
  const uint64_t incarnation_;
  proto::GraphDef& partition_;
  std::unordered_map<std::string, int> index_;
  std::set<std::string> names_;
  std::vector<NodeInfo> infos_;
  std::vector<std::vector<Input>> inputs_;
  std::vector<proto::NodeDef> added_;
  std::map<std::tuple<int, int, MemoryType>, std::string> recvs_;
};

}  // namespace

Status EnsureMemoryTypes(const OpRegistry& ops, const std::string& device, uint64_t incarnation,
                         proto::GraphDef* partition) {
  proto::GraphDef rewritten = *partition;
  WEFT_RETURN_IF_ERROR(MemoryTypeRewriter(ops, device, incarnation, &rewritten).Run());
  *partition = std::move(rewritten);
  return Status::OK();
}

}  // namespace weft
