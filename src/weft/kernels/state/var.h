// Var: a resource variable as it lives in a device's ResourceMgr — a mutex, the current value and
// whether it has been assigned — plus the helpers every variable and optimizer kernel shares:
// finding the Var behind a handle input, locking several Vars without deadlock, and copy-on-write.
//
// Copy-on-write contract: ReadVariableOp hands out the Var's tensor without copying, so the Var's
// buffer may be shared with readers. Every in-place update first calls PrepareToUpdate, which
// copies the value to a fresh buffer when anyone else still holds the old one; a value already
// read is therefore never changed under its reader. All access to tensor() and the initialized
// flag happens with mu() held.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/tensor.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/op_kernel.h"
#include "weft/framework/resource_handle.h"
#include "weft/framework/resource_mgr.h"

namespace weft::kernels::state {

// Tensors at least this large are processed on the intra-op threads; smaller ones inline.
inline constexpr int64_t kMinParallelElements = 32 * 1024;

class Var final : public ResourceBase {
 public:
  Var(std::string name, DataType dtype) : name_(std::move(name)), dtype_(dtype) {}

  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  Mutex* mu() const { return &mu_; }
  // Callers hold mu().
  Tensor* tensor() { return &tensor_; }
  bool is_initialized() const { return initialized_; }
  void set_initialized() { initialized_ = true; }

  // "Var<float32, [2,3]>" or "Var<float32, uninitialized>".
  std::string DebugString() const override;

 private:
  const std::string name_;
  const DataType dtype_;
  mutable Mutex mu_;
  Tensor tensor_;
  bool initialized_ = false;
};

// InvalidArgument "node 'x' (Op): <message>".
template <typename... Args>
Status NodeError(const OpKernel& kernel, Args&&... args) {
  return InvalidArgument(FormatNodeForError(kernel.def()), ": ", std::forward<Args>(args)...);
}

// The handle held by resource input `index`, checked to live on this kernel's device and, when
// `dtype` is valid, to hold that dtype. InvalidArgument naming the node otherwise.
StatusOr<const ResourceHandle*> HandleInput(OpKernelContext* context, int index,
                                            DataType dtype = DataType::kInvalid);

// The Var behind resource input `index` (see HandleInput). When absent: FailedPrecondition
// "node 'x' (Op): <role>variable 'v' is not initialized" (`role` like "accum " names a slot).
StatusOr<std::shared_ptr<Var>> LookupVar(OpKernelContext* context, int index, DataType dtype,
                                         std::string_view role = "");

// The not-initialized error above, for a Var found but never assigned.
Status NotInitialized(const OpKernel& kernel, const std::string& name, std::string_view role = "");

// Holds the mutexes of several Vars, locked in address order so that two kernels locking the
// same Vars never deadlock; a Var listed twice is locked once.
class VarLocks {
 public:
  explicit VarLocks(std::vector<Var*> vars);
  ~VarLocks();
  VarLocks(const VarLocks&) = delete;
  VarLocks& operator=(const VarLocks&) = delete;

 private:
  std::vector<Var*> vars_;
};

// Copies the elements of `src` into `dst` (same dtype and element count), on the intra-op threads
// when large.
void CopyElements(OpKernelContext* context, const Tensor& src, Tensor* dst);

// Makes `var`'s buffer exclusively its own before an in-place update: when someone else holds
// the buffer (a reader), replaces it with a copy. Requires var->mu() held and var initialized.
Status PrepareToUpdate(OpKernelContext* context, Var* var);

}  // namespace weft::kernels::state
