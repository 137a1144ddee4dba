#include "weft/framework/op_kernel.h"

#include "weft/core/notification.h"
#include "weft/framework/node_def_util.h"

namespace weft {

OpKernel::OpKernel(OpKernelConstruction* context)
    : node_(context->node_def()),
      input_types_(context->input_types()),
      output_types_(context->output_types()) {}

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
  StatusOr<Tensor> tensor = Tensor::Allocate(kernel().output_type(index), shape);
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
