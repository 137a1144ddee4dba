#include "weft/framework/call_frame.h"

namespace weft {

Status CallFrame::GetArg(int index, Tensor* value) const {
  if (index < 0 || index >= num_args()) {
    return InvalidArgument("argument index ", index, " out of range [0, ", num_args(), ")");
  }
  *value = args_[index];
  return Status::OK();
}

Status CallFrame::SetRetval(int index, const Tensor& value) {
  if (index < 0 || index >= num_retvals()) {
    return InvalidArgument("return value index ", index, " out of range [0, ", num_retvals(), ")");
  }
  if (retvals_[index].IsInitialized()) {
    return Internal("return value ", index, " was set twice in one step");
  }
  retvals_[index] = value;
  return Status::OK();
}

StatusOr<std::vector<Tensor>> CallFrame::ConsumeRetvals() {
  for (int i = 0; i < num_retvals(); ++i) {
    if (!retvals_[i].IsInitialized()) return Internal("return value ", i, " was never set");
  }
  return std::move(retvals_);
}

}  // namespace weft
