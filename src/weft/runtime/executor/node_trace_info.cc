#include "weft/runtime/executor/node_trace_info.h"

#include "weft/core/str_util.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/rendezvous.h"

namespace weft::internal {
namespace {

int64_t BytesOf(const std::vector<Tensor>& tensors) {
  int64_t bytes = 0;
  for (const Tensor& tensor : tensors) {
    if (tensor.IsInitialized()) bytes += static_cast<int64_t>(tensor.TotalBytes());
  }
  return bytes;
}

}  // namespace

NodeTraceInfo TraceInfoOf(const Node& node) {
  NodeTraceInfo info;
  const std::string& op = node.type_string();
  const bool send = op == "_Send" || op == "_HostSend";
  const bool recv = op == "_Recv" || op == "_HostRecv";
  if (send || recv) {
    std::string send_device, recv_device, tensor_name;
    int64_t incarnation = 0;
    if (GetNodeAttr(node.def(), "send_device", &send_device).ok() &&
        GetNodeAttr(node.def(), "send_device_incarnation", &incarnation).ok() &&
        GetNodeAttr(node.def(), "recv_device", &recv_device).ok() &&
        GetNodeAttr(node.def(), "tensor_name", &tensor_name).ok()) {
      info.kind = send ? proto::NodeExecStats::SEND : proto::NodeExecStats::RECV;
      // The key the kernels use (sendrecv_ops.cc): frame 0, iteration 0.
      info.rendezvous_key = Rendezvous::CreateKey(send_device, static_cast<uint64_t>(incarnation),
                                                  recv_device, tensor_name, {});
      info.peer = send ? recv_device : send_device;
    }
    return info;
  }
  if (op.rfind("Collective", 0) == 0) {
    info.kind = proto::NodeExecStats::COLLECTIVE;
    if (!GetNodeAttr(node.def(), "group_key", &info.group_key).ok() ||
        !GetNodeAttr(node.def(), "instance_key", &info.instance_key).ok()) {
      info.kind = proto::NodeExecStats::COMPUTE;
    }
  }
  return info;
}

void FillNodeStats(const NodeTraceInfo& info, const std::vector<Tensor>& inputs,
                   const std::vector<Tensor>& outputs, proto::NodeExecStats* stats) {
  const int64_t output_bytes = BytesOf(outputs);
  stats->set_output_bytes(output_bytes);
  stats->set_kind(info.kind);
  switch (info.kind) {
    case proto::NodeExecStats::SEND:
    case proto::NodeExecStats::RECV: {
      const bool send = info.kind == proto::NodeExecStats::SEND;
      const int64_t bytes = send ? BytesOf(inputs) : output_bytes;
      stats->set_transfer_bytes(bytes);
      stats->set_rendezvous_key(info.rendezvous_key);
      stats->add_peers(info.peer);
      stats->set_timeline_label(StrCat(stats->op(), " ", stats->node_name(), " (", bytes,
                                       " bytes) ", send ? "to " : "from ", info.peer));
      break;
    }
    case proto::NodeExecStats::COLLECTIVE: {
      // A broadcast's receivers have no input: what they moved is what they got.
      const int64_t input_bytes = BytesOf(inputs);
      const int64_t bytes = input_bytes > 0 ? input_bytes : output_bytes;
      stats->set_transfer_bytes(bytes);
      stats->set_collective_group_key(info.group_key);
      stats->set_collective_instance_key(info.instance_key);
      stats->set_timeline_label(StrCat(stats->op(), " ", stats->node_name(), " (", bytes,
                                       " bytes, group ", info.group_key, ", instance ",
                                       info.instance_key, ")"));
      break;
    }
    default:
      break;
  }
}

}  // namespace weft::internal
