#include "weft/kernels/state/var.h"

#include <algorithm>
#include <cstring>

#include "weft/framework/device_base.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels::state {

std::string Var::DebugString() const {
  MutexLock lock(mu_);
  if (!initialized_) return StrCat("Var<", DataTypeName(dtype_), ", uninitialized>");
  return StrCat("Var<", DataTypeName(dtype_), ", ", tensor_.shape().DebugString(), ">");
}

StatusOr<const ResourceHandle*> HandleInput(OpKernelContext* context, int index, DataType dtype) {
  const OpKernel& kernel = context->kernel();
  StatusOr<const ResourceHandle*> handle = HandleFromTensor(context->input(index));
  if (!handle.ok()) return NodeError(kernel, "input ", index, ": ", handle.status().message());
  const ResourceHandle& h = **handle;
  if (!h.device.empty() && h.device != context->device()->name()) {
    return NodeError(kernel, h.DebugString(), " lives on another device than this node (",
                     context->device()->name(), ")");
  }
  if (dtype != DataType::kInvalid && h.dtype != dtype) {
    return NodeError(kernel, "variable '", h.name, "' holds ", DataTypeName(h.dtype),
                     ", but this op works on ", DataTypeName(dtype));
  }
  return handle;
}

Status NotInitialized(const OpKernel& kernel, const std::string& name, std::string_view role) {
  return FailedPrecondition(FormatNodeForError(kernel.def()), ": ", role, "variable '", name,
                            "' is not initialized");
}

StatusOr<std::shared_ptr<Var>> LookupVar(OpKernelContext* context, int index, DataType dtype,
                                         std::string_view role) {
  WEFT_ASSIGN_OR_RETURN(const ResourceHandle* handle, HandleInput(context, index, dtype));
  StatusOr<std::shared_ptr<Var>> var =
      context->device()->resource_manager()->Lookup<Var>(handle->container, handle->name);
  if (IsNotFound(var.status())) return NotInitialized(context->kernel(), handle->name, role);
  if (!var.ok()) return NodeError(context->kernel(), var.status().message());
  if (dtype != DataType::kInvalid && (*var)->dtype() != dtype) {
    return NodeError(context->kernel(), "variable '", handle->name, "' holds ",
                     DataTypeName((*var)->dtype()), ", but this op works on ", DataTypeName(dtype));
  }
  return var;
}

VarLocks::VarLocks(std::vector<Var*> vars) : vars_(std::move(vars)) {
  std::sort(vars_.begin(), vars_.end());
  vars_.erase(std::unique(vars_.begin(), vars_.end()), vars_.end());
  for (Var* var : vars_) var->mu()->Lock();
}

VarLocks::~VarLocks() {
  for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) (*it)->mu()->Unlock();
}

void CopyElements(OpKernelContext* context, const Tensor& src, Tensor* dst) {
  WEFT_CHECK(src.dtype() == dst->dtype() && src.NumElements() == dst->NumElements());
  if (src.TotalBytes() == 0) return;
  bool typed = false;
  if (src.NumElements() >= kMinParallelElements) {
    typed = VisitNumericType(src.dtype(), [&]<typename T>() {
      Flat<T>(*dst).device(EigenDevice(context)) = Flat<T>(src);
    });
  }
  if (!typed) std::memcpy(dst->raw_data(), src.raw_data(), src.TotalBytes());
}

Status PrepareToUpdate(OpKernelContext* context, Var* var) {
  Tensor* current = var->tensor();
  if (current->RefCountIsOne()) return Status::OK();
  // The copy stays in the memory of the value it replaces.
  Allocator* allocator = current->allocator() ? current->allocator() : HostAllocator();
  WEFT_ASSIGN_OR_RETURN(Tensor copy,
                        Tensor::Allocate(allocator, current->dtype(), current->shape()));
  CopyElements(context, *current, &copy);
  *current = std::move(copy);
  return Status::OK();
}

}  // namespace weft::kernels::state
