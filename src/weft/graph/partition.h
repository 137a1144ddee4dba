// Partitioning a placed graph: one GraphDef per device, the cut data and control edges replaced by
// _Send/_Recv pairs that meet in the step's Rendezvous. Every node of the input must have an
// assigned device. Each partition holds copies of its device's nodes (NodeDef `device` set to the
// assigned device, attrs, data-input order and control inputs kept) plus the generated nodes:
//
//   data edge a:0 (dev S) -> b (dev D):   S: a -> a/_send_0_to_D         D: a/_recv_0_on_D -> b
//   control edge ^a (dev S) -> b (dev D): S: ^a -> a/_ctrl_const_to_D -> a/_ctrl_send_to_D
//                                         D: a/_ctrl_recv_on_D -> ^b
//
// All consumers of one tensor on one device share one pair; all control consumers of one node on
// one device share one pair. Both ends of a pair carry the same tensor_name, send_device,
// send_device_incarnation and recv_device, so the kernels build the same rendezvous key (see
// framework/rendezvous.h). Generated node names are unique within the whole output (suffixes
// "_1", "_2", ... when a name is taken). Stateless; safe from any thread for distinct outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "weft/graph/graph.h"

namespace weft {

struct PartitionOptions {
  // Incarnation of each device by full name (goes into _Send/_Recv's send_device_incarnation, as
  // the bits of the uint64 stored in the int attr). Needed only when some edge crosses devices.
  std::function<uint64_t(const std::string& device)> get_incarnation;
  // Unique prefix for the tensor names of this graph's pairs, so that graphs partitioned
  // separately but run in one step keep distinct rendezvous keys. Tensor names are
  // "<prefix>_<edge id>_<src node>_<src output>" ("..._ctrl" for control edges).
  std::string edge_name_prefix = "edge";
};

// Splits `graph` into one GraphDef per device, keyed by full device name (only devices that hold a
// node get one). InvalidArgument naming the node when a node has no assigned device or misses a
// data input, or when get_incarnation is unset and an edge crosses devices. On error `partitions`
// is left empty; on success it is replaced.
Status Partition(const PartitionOptions& options, const Graph& graph,
                 std::map<std::string, proto::GraphDef>* partitions);

}  // namespace weft
