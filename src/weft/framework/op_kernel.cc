#include "weft/framework/op_kernel.h"

#include "weft/core/notification.h"
#include "weft/framework/device_base.h"
#include "weft/framework/node_def_util.h"

namespace weft {

OpKernel::OpKernel(OpKernelConstruction* context)
    : node_(context->node_def()),
      input_types_(context->input_types()),
      output_types_(context->output_types()),
      input_memory_types_(input_types_.size(), MemoryType::kHost),
      output_memory_types_(output_types_.size(), MemoryType::kHost) {
  DeviceBase* device = context->device();
  const bool host_device = device == nullptr || device->HasHostMemory();
  if (!host_device) {
    std::vector<MemoryType> inputs, outputs;
    Status status = MemoryTypesForNode(node_, context->op_def(), &inputs, &outputs);
    if (status.ok() && inputs.size() == input_types_.size() &&
        outputs.size() == output_types_.size()) {
      input_memory_types_ = std::move(inputs);
      output_memory_types_ = std::move(outputs);
    } else {
      context->SetStatus(status.ok() ? Internal(FormatNodeForError(node_),
                                                ": memory types do not match the signature")
                                     : status);
    }
  }
  // Looked up once here, so allocating an output costs one load.
  for (MemoryType type : output_memory_types_) {
    const bool on_host = type == MemoryType::kHost && !host_device;
    output_allocators_.push_back(device == nullptr ? HostAllocator()
                                                   : device->GetAllocator({.on_host = on_host}));
  }
}

Status AsyncOpKernel::Compute(OpKernelContext* context) {
  Notification done;
  ComputeAsync(context, [&done] { done.Notify(); });
  done.WaitForNotification();
  return context->status();
}

OpKernelContext::OpKernelContext(const Params& params)
    : params_(params), outputs_(params.kernel->num_outputs()) {}

Status OpKernelContext::AllocateOutput(int index, const TensorShape& shape, Tensor** output) {
  WEFT_CHECK(index >= 0 && index < num_outputs());
  StatusOr<Tensor> tensor =
      Tensor::Allocate(kernel().output_allocator(index), kernel().output_type(index), shape);
  if (!tensor.ok()) return tensor.status().WithContext(FormatNodeForError(kernel().def()));
  outputs_[index] = std::move(tensor).value();
  *output = &outputs_[index];
  return Status::OK();
}

Status OpKernelContext::ForwardInputOrAllocateOutput(std::initializer_list<int> candidate_inputs,
                                                     int index, const TensorShape& shape,
                                                     Tensor** output) {
  WEFT_CHECK(index >= 0 && index < num_outputs());
  for (int input_index : candidate_inputs) {
    Tensor& candidate = (*params_.inputs)[input_index];
    if (candidate.dtype() == kernel().output_type(index) &&
        candidate.NumElements() == shape.num_elements() && candidate.RefCountIsOne()) {
      outputs_[index] = candidate.Reshaped(shape);
      // The output now owns the buffer; the input keeps a view of it for reading during Compute.
      *output = &outputs_[index];
      return Status::OK();
    }
  }
  return AllocateOutput(index, shape, output);
}

StatusOr<Tensor> OpKernelContext::AllocateTemp(DataType dtype, const TensorShape& shape) {
  StatusOr<Tensor> tensor = Tensor::Allocate(device()->GetAllocator(), dtype, shape);
  if (!tensor.ok()) return tensor.status().WithContext(FormatNodeForError(kernel().def()));
  return tensor;
}

Status OpKernelContext::SetOutput(int index, Tensor value) {
  WEFT_CHECK(index >= 0 && index < num_outputs());
  if (value.dtype() != kernel().output_type(index)) {
    return Internal(FormatNodeForError(kernel().def()), ": output ", index, " set to ",
                    DataTypeName(value.dtype()), ", but declared ",
                    DataTypeName(kernel().output_type(index)));
  }
  outputs_[index] = std::move(value);
  return Status::OK();
}

}  // namespace weft
