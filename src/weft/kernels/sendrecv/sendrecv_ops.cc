// _Send and _Recv kernels: hand a tensor to the step's Rendezvous under the key their attrs name
// (frame 0, iteration 0 until Weft has control-flow frames), and take it back out on the other
// side. The rendezvous never copies; _Recv copies a tensor that arrives in another memory space
// than its output's (through the DeviceContexts, see framework/copy_tensor.h), so between devices
// in host memory tensors pass without copying. Both serve every dtype, resource handles included.
// _HostSend/_HostRecv are the same kernels for an end in host memory.
#include "weft/framework/copy_tensor.h"
#include "weft/framework/device_base.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/rendezvous.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {
namespace {

// Builds the rendezvous key from the node's attrs; errors go to `context`.
Rendezvous::ParsedKey KeyFromAttrs(OpKernelConstruction* context) {
  std::string send_device, recv_device, tensor_name;
  int64_t send_device_incarnation = 0;
  Status status = context->GetAttr("send_device", &send_device);
  if (status.ok()) status = context->GetAttr("send_device_incarnation", &send_device_incarnation);
  if (status.ok()) status = context->GetAttr("recv_device", &recv_device);
  if (status.ok()) status = context->GetAttr("tensor_name", &tensor_name);
  if (!status.ok()) {
    context->SetStatus(status);
    return Rendezvous::ParsedKey();
  }
  StatusOr<Rendezvous::ParsedKey> key = Rendezvous::ParseKey(
      Rendezvous::CreateKey(send_device, static_cast<uint64_t>(send_device_incarnation),
                            recv_device, tensor_name, FrameAndIter()));
  if (!key.ok()) {
    context->SetStatus(
        InvalidArgument(FormatNodeForError(context->node_def()), ": ", key.status().message()));
    return Rendezvous::ParsedKey();
  }
  return *key;
}

Rendezvous::Args ArgsFrom(OpKernelContext* context) {
  Rendezvous::Args args;
  args.device = context->device();
  args.cancellation_manager = context->cancellation_manager();
  return args;
}

class SendOp final : public OpKernel {
 public:
  explicit SendOp(OpKernelConstruction* context) : OpKernel(context), key_(KeyFromAttrs(context)) {}

  Status Compute(OpKernelContext* context) override {
    if (context->rendezvous() == nullptr) {
      return FailedPrecondition(FormatNodeForError(def()), " runs without a rendezvous");
    }
    return context->rendezvous()
        ->Send(key_, ArgsFrom(context), context->input(0), /*is_dead=*/false)
        .WithContext(FormatNodeForError(def()));
  }
  bool IsCheap() const override { return true; }

 private:
  const Rendezvous::ParsedKey key_;
};

class RecvOp final : public AsyncOpKernel {
 public:
  explicit RecvOp(OpKernelConstruction* context)
      : AsyncOpKernel(context), key_(KeyFromAttrs(context)) {
    context->SetStatus(context->GetAttr("tensor_type", &tensor_type_));
  }

  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    if (context->rendezvous() == nullptr) {
      context->SetStatus(
          FailedPrecondition(FormatNodeForError(def()), " runs without a rendezvous"));
      done();
      return;
    }
    context->rendezvous()->RecvAsync(
        key_, ArgsFrom(context),
        [this, context, done = std::move(done)](
            const Status& status, const Rendezvous::Args& send_args, const Rendezvous::Args&,
            const Tensor& value, bool is_dead) {
          // Host to host (the common case) shares the buffer without another callback.
          if (!status.ok() || SameMemorySpace(value.allocator(), output_allocator(0))) {
            context->SetStatus(Finish(context, status, value, is_dead));
            done();
            return;
          }
          const AllocatorAttributes attributes{.on_host =
                                                   output_memory_type(0) == MemoryType::kHost};
          CopyTensorAsync(send_args.device, context->device(), attributes, value,
                          [this, context, is_dead, done](const Status& copied, Tensor output) {
                            context->SetStatus(Finish(context, copied, output, is_dead));
                            done();
                          });
        });
  }

 private:
  Status Finish(OpKernelContext* context, const Status& status, const Tensor& value,
                bool is_dead) const {
    WEFT_RETURN_IF_ERROR(status.WithContext(FormatNodeForError(def())));
    if (is_dead) {
      return Unimplemented(FormatNodeForError(def()), ": received a dead tensor under key '",
                           key_.full_key, "'; dead tensors need control flow, which Weft lacks");
    }
    if (value.dtype() != tensor_type_) {
      return InvalidArgument(FormatNodeForError(def()), ": received a ",
                             DataTypeName(value.dtype()), " tensor under key '", key_.full_key,
                             "', but tensor_type is ", DataTypeName(tensor_type_));
    }
    return context->SetOutput(0, value);
  }

  const Rendezvous::ParsedKey key_;
  DataType tensor_type_ = DataType::kInvalid;
};

}  // namespace

void RegisterSendRecvKernels(KernelRegistry& registry) {
  // No type constraint: one kernel serves every dtype, kResource included.
  registry.Register<SendOp>(KernelDef("_Send", "CPU"));
  registry.Register<RecvOp>(KernelDef("_Recv", "CPU"));
  registry.Register<SendOp>(KernelDef("_HostSend", "CPU"));
  registry.Register<RecvOp>(KernelDef("_HostRecv", "CPU"));
}

}  // namespace weft::kernels
