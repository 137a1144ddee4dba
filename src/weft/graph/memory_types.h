// EnsureMemoryTypes: makes the partition of a device with memory of its own agree with where each
// op keeps its args. An op may keep an input or output in host memory (OpDefBuilder::HostMemory:
// shape arguments, resource handles) while the rest of the device's tensors live in its own memory;
// every data edge joining an output in one memory to an input in the other gets a _Send/_Recv pair
// on the device, and the pair's _Recv copies the tensor through the device's DeviceContext:
//
//   shape (host) -> x/_memory_send_0_to_device -> x/_memory_recv_0_to_device -> Mul (device)
//
// The partitioner's own ends are switched to _HostSend (the tensor sent is in host memory) and
// _HostRecv (every consumer wants host memory), so a shape crossing devices is not copied into
// device memory and back. The pair ends are _HostSend/_Send and _Recv/_HostRecv after the two
// memories they join. A partition for a host-memory device needs none of this. Stateless.
#pragma once

#include <cstdint>
#include <string>

#include "weft/framework/op_registry.h"
#include "weft/graph.pb.h"

namespace weft {

// Rewrites `partition`, the graph of the device named `device` (incarnation `incarnation`), in
// place. Errors name the node whose op or input is at fault; on error the partition is unchanged.
Status EnsureMemoryTypes(const OpRegistry& ops, const std::string& device, uint64_t incarnation,
                         proto::GraphDef* partition);

}  // namespace weft
