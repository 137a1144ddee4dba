#include "weft/runtime/trace/node_trace_info.h"

#include <functional>
#include <thread>
#include <utility>

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
  info.node_name = node.name();
  info.op = node.type_string();
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

NodeExecRecord RecordNodeExec(int node_id, const NodeTraceInfo& info, int64_t start_nanos,
                              int64_t duration_nanos, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& outputs) {
  // Hashing the thread's id each time would cost more than the rest of the record.
  thread_local const int32_t thread_id =
      static_cast<int32_t>(std::hash<std::thread::id>()(std::this_thread::get_id()) & 0x7fffffff);
  NodeExecRecord record;
  record.node_id = node_id;
  record.thread_id = thread_id;
  record.start_nanos = start_nanos;
  record.duration_nanos = duration_nanos;
  record.output_bytes = BytesOf(outputs);
  switch (info.kind) {
    case proto::NodeExecStats::SEND:
      record.transfer_bytes = BytesOf(inputs);
      break;
    case proto::NodeExecStats::RECV:
      record.transfer_bytes = record.output_bytes;
      break;
    case proto::NodeExecStats::COLLECTIVE: {
      // A broadcast's receivers have no input: what they moved is what they got.
      const int64_t input_bytes = BytesOf(inputs);
      record.transfer_bytes = input_bytes > 0 ? input_bytes : record.output_bytes;
      break;
    }
    default:
      break;
  }
  return record;
}

void FillNodeStats(const NodeTraceInfo& info, const NodeExecRecord& record,
                   proto::NodeExecStats* stats) {
  stats->set_node_name(info.node_name);
  stats->set_op(info.op);
  SetStatsTimes(record.start_nanos, record.start_nanos + record.duration_nanos, stats);
  stats->set_thread_id(record.thread_id);
  stats->set_output_bytes(record.output_bytes);
  stats->set_kind(info.kind);
  const int64_t bytes = record.transfer_bytes;
  switch (info.kind) {
    case proto::NodeExecStats::SEND:
    case proto::NodeExecStats::RECV: {
      const bool send = info.kind == proto::NodeExecStats::SEND;
      stats->set_transfer_bytes(bytes);
      stats->set_rendezvous_key(info.rendezvous_key);
      stats->add_peers(info.peer);
      stats->set_timeline_label(StrCat(info.op, " ", info.node_name, " (", bytes, " bytes) ",
                                       send ? "to " : "from ", info.peer));
      break;
    }
    case proto::NodeExecStats::COLLECTIVE:
      stats->set_transfer_bytes(bytes);
      stats->set_collective_group_key(info.group_key);
      stats->set_collective_instance_key(info.instance_key);
      stats->set_timeline_label(StrCat(info.op, " ", info.node_name, " (", bytes, " bytes, group ",
                                       info.group_key, ", instance ", info.instance_key, ")"));
      break;
    default:
      break;
  }
}

ExecutorStepStats::ExecutorStepStats(std::shared_ptr<const std::vector<NodeTraceInfo>> nodes,
                                     std::vector<NodeExecRecord> records)
    : nodes_(std::move(nodes)), records_(std::move(records)) {}

void ExecutorStepStats::AppendTo(proto::DeviceStepStats* device_stats) const {
  auto* node_stats = device_stats->mutable_node_stats();
  node_stats->Reserve(node_stats->size() + static_cast<int>(records_.size()));
  for (const NodeExecRecord& record : records_) {
    FillNodeStats((*nodes_)[record.node_id], record, node_stats->Add());
  }
}

}  // namespace weft::internal
