// _Send and _Recv: the two ends of a tensor crossing devices, added by the partitioner (never by
// users). Both name the same rendezvous key through their attrs; the executor supplies the step's
// Rendezvous. `client_terminated` marks an end fed or fetched by the client instead of a kernel.
// _HostSend/_HostRecv are the same ends for a tensor in host memory on a device with memory of its
// own (a shape argument); the runtime picks them (graph/memory_types.h).
#include <string>

#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {

namespace {

OpDefBuilder SendOp(const std::string& name, bool host_memory) {
  OpDefBuilder builder(name);
  builder.Input("tensor: T");
  if (host_memory) builder.HostMemory("tensor");
  builder.Attr("T: type")
      .Attr("tensor_name: string")
      .Attr("send_device: string")
      .Attr("send_device_incarnation: int")
      .Attr("recv_device: string")
      .Attr("client_terminated: bool = false")
      .SetIsStateful()
      .SetIsInternal()
      .SetShapeFn(shape_fn::UnknownShape)
      .Doc(
          "Sends `tensor` from send_device to recv_device under the rendezvous key built from "
          "these attrs and the step.");
  return builder;
}

OpDefBuilder RecvOp(const std::string& name, bool host_memory) {
  OpDefBuilder builder(name);
  builder.Output("tensor: tensor_type");
  if (host_memory) builder.HostMemory("tensor");
  builder.Attr("tensor_type: type")
      .Attr("tensor_name: string")
      .Attr("send_device: string")
      .Attr("send_device_incarnation: int")
      .Attr("recv_device: string")
      .Attr("client_terminated: bool = false")
      .SetIsStateful()
      .SetIsInternal()
      .SetShapeFn(shape_fn::UnknownShape)
      .Doc(
          "Receives the tensor its matching _Send sent in this step; waits (asynchronously) until "
          "it arrives.");
  return builder;
}

}  // namespace

void RegisterSendRecvOps(OpRegistry& registry) {
  registry.RegisterOrDie(SendOp("_Send", /*host_memory=*/false));
  registry.RegisterOrDie(RecvOp("_Recv", /*host_memory=*/false));
  registry.RegisterOrDie(SendOp("_HostSend", /*host_memory=*/true));
  registry.RegisterOrDie(RecvOp("_HostRecv", /*host_memory=*/true));
}

}  // namespace weft::ops
