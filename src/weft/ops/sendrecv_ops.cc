// _Send and _Recv: the two ends of a tensor crossing devices, added by the partitioner (never by
// users). Both name the same rendezvous key through their attrs; the executor supplies the step's
// Rendezvous. `client_terminated` marks an end fed or fetched by the client instead of a kernel.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {

void RegisterSendRecvOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("_Send")
                             .Input("tensor: T")
                             .Attr("T: type")
                             .Attr("tensor_name: string")
                             .Attr("send_device: string")
                             .Attr("send_device_incarnation: int")
                             .Attr("recv_device: string")
                             .Attr("client_terminated: bool = false")
                             .SetIsStateful()
                             .SetIsInternal()
                             .SetShapeFn(shape_fn::UnknownShape)
                             .Doc("Sends `tensor` from send_device to recv_device under the "
                                  "rendezvous key built from these attrs and the step."));
  registry.RegisterOrDie(OpDefBuilder("_Recv")
                             .Output("tensor: tensor_type")
                             .Attr("tensor_type: type")
                             .Attr("tensor_name: string")
                             .Attr("send_device: string")
                             .Attr("send_device_incarnation: int")
                             .Attr("recv_device: string")
                             .Attr("client_terminated: bool = false")
                             .SetIsStateful()
                             .SetIsInternal()
                             .SetShapeFn(shape_fn::UnknownShape)
                             .Doc("Receives the tensor its matching _Send sent in this step; waits "
                                  "(asynchronously) until it arrives."));
}

}  // namespace weft::ops
