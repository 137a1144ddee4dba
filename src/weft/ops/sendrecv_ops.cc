// _Send and _Recv: the two ends of a tensor crossing devices, added by the partitioner (never by
// users). Both name the same rendezvous key through their attrs; the executor supplies the step's
// Rendezvous. `client_terminated` marks an end fed or fetched by the client instead of a kernel.
// _HostSend/_HostRecv are the same ends for a tensor in host memory on a device with memory of its
// own (a shape argument); the runtime picks them (graph/memory_types.h).
#include <string>
#include <string_view>

#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {

namespace {

// _Send and _Recv (and their host-memory forms) share the rendezvous key's attrs; `type_attr` is
// the dtype attr of the one tensor they carry.
OpDefBuilder TransferOp(const std::string& name, bool is_send, bool host_memory,
                        std::string_view doc) {
  OpDefBuilder builder(name);
  const std::string type_attr = is_send ? "T" : "tensor_type";
  if (is_send) {
    builder.Input("tensor: " + type_attr);
  } else {
    builder.Output("tensor: " + type_attr);
  }
  if (host_memory) builder.HostMemory("tensor");
  builder.Attr(type_attr + ": type")
      .Attr("tensor_name: string")
      .Attr("send_device: string")
      .Attr("send_device_incarnation: int")
      .Attr("recv_device: string")
      .Attr("client_terminated: bool = false")
      .SetIsStateful()
      .SetIsInternal()
      .SetShapeFn(shape_fn::UnknownShape)
      .Doc(doc);
  return builder;
}

OpDefBuilder SendOp(const std::string& name, bool host_memory) {
  return TransferOp(name, /*is_send=*/true, host_memory,
                    "Sends `tensor` from send_device to recv_device under the rendezvous key built "
                    "from these attrs and the step.");
}

OpDefBuilder RecvOp(const std::string& name, bool host_memory) {
  return TransferOp(name, /*is_send=*/false, host_memory,
                    "Receives the tensor its matching _Send sent in this step; waits "
                    "(asynchronously) until it arrives.");
}

}  // namespace

void RegisterSendRecvOps(OpRegistry& registry) {
  registry.RegisterOrDie(SendOp("_Send", /*host_memory=*/false));
  registry.RegisterOrDie(RecvOp("_Recv", /*host_memory=*/false));
  registry.RegisterOrDie(SendOp("_HostSend", /*host_memory=*/true));
  registry.RegisterOrDie(RecvOp("_HostRecv", /*host_memory=*/true));
}

}  // namespace weft::ops
