// NodeTraceInfo: what a traced step records of a node beyond its time (its kind, and for a
// _Send/_Recv the rendezvous key and the device on the other side, for a collective its instance),
// worked out once per node when the executor is built so that untraced steps pay nothing.
// Immutable after construction; FillNodeStats is a pure function, safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/graph/graph.h"
#include "weft/step_stats.pb.h"

namespace weft::internal {

struct NodeTraceInfo {
  proto::NodeExecStats::Kind kind = proto::NodeExecStats::COMPUTE;
  std::string rendezvous_key;  // _Send/_Recv: the key both ends use (frame 0, iteration 0)
  std::string peer;            // _Send: the receiving device; _Recv: the sending one
  int64_t group_key = 0;       // collectives
  int64_t instance_key = 0;
};

// Reads the node's attrs (a node missing one traces as plain compute: building its kernel
// reports the real error).
NodeTraceInfo TraceInfoOf(const Node& node);

// Adds to `stats` what `info`, the node's inputs and its outputs say: output bytes, kind, the
// bytes a send, receive or collective moved, its key, peer and a timeline label.
void FillNodeStats(const NodeTraceInfo& info, const std::vector<Tensor>& inputs,
                   const std::vector<Tensor>& outputs, proto::NodeExecStats* stats);

}  // namespace weft::internal
