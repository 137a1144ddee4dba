// TransportSkeleton (see the header).
#include "weft/distributed/collective/internal/transport_skeleton.h"

namespace weft::internal {

Status TransportSkeleton::AllReduce(const TransportOp& op, const std::vector<Tensor>& inputs,
                                    double divisor, std::vector<Tensor>* outputs) {
  WEFT_RETURN_IF_ERROR(CheckPoisoned());
  const std::string label = OpLabel(op);
  StatusOr<FlatAllReduce> flat = PrepareAllReduce(op, inputs, divisor);
  if (!flat.ok()) return Fail(flat.status());
  const Deadline deadline(options_.timeout + op.extra_wait);
  WEFT_RETURN_IF_ERROR(Finish(RunAllReduce(label, *flat, deadline), flat->identity));
  FinishAllReduce(inputs, *flat, outputs);
  return Status::OK();
}

Status TransportSkeleton::Broadcast(const TransportOp& op, int root, Tensor* value) {
  WEFT_RETURN_IF_ERROR(CheckPoisoned());
  const std::string label = OpLabel(op);
  StatusOr<OpIdentity> identity = PrepareBroadcast(op, root, options_.world_size, *value);
  if (!identity.ok()) return Fail(identity.status());
  const Deadline deadline(options_.timeout + op.extra_wait);
  return Finish(RunBroadcast(label, *identity, root, value, deadline), *identity);
}

Status TransportSkeleton::AllGather(const TransportOp& op, const Tensor& input, Tensor* output) {
  WEFT_RETURN_IF_ERROR(CheckPoisoned());
  const std::string label = OpLabel(op);
  StatusOr<OpIdentity> identity = PrepareAllGather(op, input, options_.world_size, output);
  if (!identity.ok()) return Fail(identity.status());
  const Deadline deadline(options_.timeout + op.extra_wait);
  return Finish(RunAllGather(label, *identity, input, output, deadline), *identity);
}

}  // namespace weft::internal
