// Resource-variable kernels. VarHandleOp makes its handle once, at construction; the others find
// the Var behind a handle in the device's ResourceMgr and work under its mutex. Reads share the
// Var's buffer; ResourceGather copies the rows it is asked for; AssignAdd/AssignSub update in place
// after copy-on-write (see var.h).
#include <cstring>

#include "weft/framework/device_base.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/prefetch.h"
#include "weft/kernels/state/state_kernels.h"
#include "weft/kernels/state/var.h"

namespace weft::kernels::state {
namespace {

class VarHandleOp final : public OpKernel {
 public:
  explicit VarHandleOp(OpKernelConstruction* context) : OpKernel(context) {
    ResourceHandle handle;
    context->SetStatus(context->GetAttr("container", &handle.container));
    context->SetStatus(context->GetAttr("shared_name", &handle.name));
    context->SetStatus(context->GetAttr("dtype", &handle.dtype));
    context->SetStatus(context->GetAttr("shape", &handle.shape));
    if (handle.name.empty()) handle.name = name();
    if (context->device() != nullptr) handle.device = context->device()->name();
    handle_ = MakeResourceHandleTensor(std::move(handle));
  }

  Status Compute(OpKernelContext* context) override { return context->SetOutput(0, handle_); }
  bool IsCheap() const override { return true; }

 private:
  Tensor handle_;
};

// Reads a variable's dtype from the "dtype" attr.
class VarOpBase : public OpKernel {
 public:
  explicit VarOpBase(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("dtype", &dtype_));
  }

 protected:
  DataType dtype_ = DataType::kInvalid;
};

class ReadVariableOp final : public VarOpBase {
 public:
  using VarOpBase::VarOpBase;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Var> var, LookupVar(context, 0, dtype_));
    Tensor value;
    {
      MutexLock lock(*var->mu());
      if (!var->is_initialized()) return NotInitialized(*this, var->name());
      value = *var->tensor();  // shares the buffer; updates copy first
    }
    return context->SetOutput(0, std::move(value));
  }
  bool IsCheap() const override { return true; }
};

// Copies rows `indices` of the variable out (not a view: the next sparse update may write them).
class ResourceGatherOp final : public VarOpBase {
 public:
  using VarOpBase::VarOpBase;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Var> var, LookupVar(context, 0, dtype_));
    const Tensor& indices = context->input(1);
    MutexLock lock(*var->mu());
    if (!var->is_initialized()) return NotInitialized(*this, var->name());
    const Tensor& table = *var->tensor();
    if (table.dims() < 1) {
      return NodeError(*this, "cannot gather rows of variable '", var->name(), "' of shape ",
                       table.shape());
    }
    std::vector<int64_t> dims = indices.shape().dim_sizes();
    for (int d = 1; d < table.dims(); ++d) dims.push_back(table.dim_size(d));
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape(dims), &output));
    const int64_t rows = table.dim_size(0);
    const size_t row_bytes = rows == 0 ? 0 : table.TotalBytes() / rows;
    const char* source = static_cast<const char*>(table.raw_data());
    char* target = static_cast<char*>(output->raw_data());
    auto row_at = [&indices](int64_t i) -> int64_t {
      return indices.dtype() == DataType::kInt32 ? indices.data<int32_t>()[i]
                                                 : indices.data<int64_t>()[i];
    };
    const int64_t count = indices.NumElements();
    for (int64_t i = 0; i < count; ++i) {
      if (i + kPrefetchRowsAhead < count) {
        const int64_t ahead = row_at(i + kPrefetchRowsAhead);
        if (ahead >= 0 && ahead < rows) {
          PrefetchRowForRead(source + ahead * row_bytes, row_bytes);
        }
      }
      const int64_t row = row_at(i);
      if (row < 0 || row >= rows) {
        return NodeError(*this, "index ", row, " at position ", i, " is outside variable '",
                         var->name(), "' of ", rows, " rows");
      }
      std::memcpy(target + i * row_bytes, source + row * row_bytes, row_bytes);
    }
    return Status::OK();
  }
};

class AssignVariableOp final : public VarOpBase {
 public:
  using VarOpBase::VarOpBase;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(const ResourceHandle* handle, HandleInput(context, 0, dtype_));
    const Tensor& value = context->input(1);
    if (handle->shape.rank_known() && !handle->shape.IsCompatibleWith(value.shape())) {
      return NodeError(*this, "cannot assign a value of shape ", value.shape(), " to variable '",
                       handle->name, "' of shape ", handle->shape.DebugString());
    }
    DataType dtype = dtype_;
    WEFT_ASSIGN_OR_RETURN(
        std::shared_ptr<Var> var,
        context->device()->resource_manager()->LookupOrCreate<Var>(
            handle->container, handle->name, [&]() -> StatusOr<std::shared_ptr<Var>> {
              return std::make_shared<Var>(handle->name, dtype);
            }));
    if (var->dtype() != dtype_) {
      return NodeError(*this, "variable '", handle->name, "' holds ", DataTypeName(var->dtype()),
                       ", but this op assigns ", DataTypeName(dtype_));
    }
    MutexLock lock(*var->mu());
    Tensor* current = var->tensor();
    if (var->is_initialized() && current->RefCountIsOne() && current->shape() == value.shape()) {
      CopyElements(context, value, current);  // keep the Var's own buffer
    } else {
      *current = value;
    }
    var->set_initialized();
    return Status::OK();
  }
};

// AssignAddVariableOp (kSign 1) and AssignSubVariableOp (kSign -1).
template <typename T, int kSign>
class AssignUpdateVariableOp final : public VarOpBase {
 public:
  using VarOpBase::VarOpBase;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Var> var, LookupVar(context, 0, dtype_));
    const Tensor& value = context->input(1);
    MutexLock lock(*var->mu());
    if (!var->is_initialized()) return NotInitialized(*this, var->name());
    if (!(var->tensor()->shape() == value.shape())) {
      return NodeError(*this, "cannot ", kSign > 0 ? "add" : "subtract", " a value of shape ",
                       value.shape(), kSign > 0 ? " to" : " from", " variable '", var->name(),
                       "' of shape ", var->tensor()->shape());
    }
    WEFT_RETURN_IF_ERROR(PrepareToUpdate(context, var.get()));
    auto target = Flat<T>(*var->tensor());
    auto delta = Flat<T>(value);
    if (value.NumElements() >= kMinParallelElements) {
      if constexpr (kSign > 0) {
        target.device(EigenDevice(context)) += delta;
      } else {
        target.device(EigenDevice(context)) -= delta;
      }
    } else {
      if constexpr (kSign > 0) {
        target += delta;
      } else {
        target -= delta;
      }
    }
    return Status::OK();
  }
};

class VarIsInitializedOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(const ResourceHandle* handle, HandleInput(context, 0));
    StatusOr<std::shared_ptr<Var>> var =
        context->device()->resource_manager()->Lookup<Var>(handle->container, handle->name);
    bool initialized = false;
    if (var.ok()) {
      MutexLock lock(*(*var)->mu());
      initialized = (*var)->is_initialized();
    } else if (!IsNotFound(var.status())) {
      return NodeError(*this, var.status().message());
    }
    return context->SetOutput(0, Tensor::Scalar(initialized));
  }
  bool IsCheap() const override { return true; }
};

class DestroyResourceOp final : public OpKernel {
 public:
  explicit DestroyResourceOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("ignore_lookup_error", &ignore_lookup_error_));
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(const ResourceHandle* handle, HandleInput(context, 0));
    Status status = context->device()->resource_manager()->Delete(handle->container, handle->name);
    if (status.ok() || (IsNotFound(status) && ignore_lookup_error_)) return Status::OK();
    return status.WithContext(FormatNodeForError(def()));
  }
  bool IsCheap() const override { return true; }

 private:
  bool ignore_lookup_error_ = true;
};

template <typename T>
void RegisterUpdatesForType(KernelRegistry& registry) {
  registry.Register<AssignUpdateVariableOp<T, 1>>(
      KernelDef("AssignAddVariableOp", "CPU").TypeConstraint<T>("dtype"));
  registry.Register<AssignUpdateVariableOp<T, -1>>(
      KernelDef("AssignSubVariableOp", "CPU").TypeConstraint<T>("dtype"));
}

}  // namespace

void RegisterVariableKernels(KernelRegistry& registry) {
  // These move whole tensors without looking at elements: any dtype.
  registry.Register<VarHandleOp>(KernelDef("VarHandleOp", "CPU"));
  registry.Register<ReadVariableOp>(KernelDef("ReadVariableOp", "CPU"));
  registry.Register<ResourceGatherOp>(KernelDef("ResourceGather", "CPU"));
  registry.Register<AssignVariableOp>(KernelDef("AssignVariableOp", "CPU"));
  registry.Register<VarIsInitializedOp>(KernelDef("VarIsInitializedOp", "CPU"));
  registry.Register<DestroyResourceOp>(KernelDef("DestroyResourceOp", "CPU"));
  RegisterUpdatesForType<float>(registry);
  RegisterUpdatesForType<double>(registry);
  RegisterUpdatesForType<int32_t>(registry);
  RegisterUpdatesForType<int64_t>(registry);
}

}  // namespace weft::kernels::state
