// What a traced step records of a node: NodeTraceInfo holds what never changes from step to step
// (name, op, kind, and for a _Send/_Recv the rendezvous key and the device on the other side, for
// a collective its instance), worked out once when the executor is built; a NodeExecRecord holds
// one run's numbers. ExecutorStepStats turns a step's records into NodeExecStats when the step's
// stats are finalized. NodeTraceInfo is immutable after construction; the functions are pure.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/graph/graph.h"
#include "weft/runtime/trace/step_stats_collector.h"
#include "weft/step_stats.pb.h"

namespace weft::internal {

struct NodeTraceInfo {
  std::string node_name;
  std::string op;
  proto::NodeExecStats::Kind kind = proto::NodeExecStats::COMPUTE;
  std::string rendezvous_key;  // _Send/_Recv: the key both ends use (frame 0, iteration 0)
  std::string peer;            // _Send: the receiving device; _Recv: the sending one
  int64_t group_key = 0;       // collectives
  int64_t instance_key = 0;
};

// One run of one node in a traced step: plain numbers, so that recording it allocates nothing.
struct NodeExecRecord {
  int node_id = -1;
  int32_t thread_id = 0;
  int64_t start_nanos = 0;  // StepStatsNowNanos() when the kernel started
  int64_t duration_nanos = 0;
  int64_t output_bytes = 0;
  int64_t transfer_bytes = 0;  // _Send, _Recv and collectives: what the node moved
};

// Reads the node's attrs (a node missing one traces as plain compute: building its kernel
// reports the real error).
NodeTraceInfo TraceInfoOf(const Node& node);

// The record of a node that ran `duration_nanos` from `start_nanos` with these inputs and outputs.
NodeExecRecord RecordNodeExec(int node_id, const NodeTraceInfo& info, int64_t start_nanos,
                              int64_t duration_nanos, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& outputs);

// Sets `stats` from the node's fixed facts and one run's record: name, op, times, thread, output
// bytes, kind, and for a send, receive or collective the bytes it moved, its key, peer and a
// timeline label.
void FillNodeStats(const NodeTraceInfo& info, const NodeExecRecord& record,
                   proto::NodeExecStats* stats);

// The records of one executor's traced step; AppendTo builds their NodeExecStats, in the order
// the nodes finished. `nodes` is indexed by node id and shared with the executor that made it.
class ExecutorStepStats final : public DeferredNodeStats {
 public:
  ExecutorStepStats(std::shared_ptr<const std::vector<NodeTraceInfo>> nodes,
                    std::vector<NodeExecRecord> records);
  void AppendTo(proto::DeviceStepStats* device_stats) const override;

 private:
  const std::shared_ptr<const std::vector<NodeTraceInfo>> nodes_;
  const std::vector<NodeExecRecord> records_;
};

}  // namespace weft::internal
