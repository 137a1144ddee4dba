// OpKernel: the code that runs one node on one device. A kernel is built once per node when an
// executor is prepared (reading attrs in its constructor through OpKernelConstruction) and then
// Compute()d once per step, possibly from several threads at once for concurrent steps, so Compute
// must not mutate the kernel. AsyncOpKernel finishes through a callback instead of blocking a
// thread (Recv, collectives).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/allocator.h"
#include "weft/core/tensor.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/op_def.h"

namespace weft {

class CallFrame;
class CancellationManager;
class CollectiveExecutor;
class DeviceBase;
class Rendezvous;
class OpKernelContext;
class AsyncOpKernel;

class OpKernelConstruction {
 public:
  OpKernelConstruction(const proto::NodeDef& node, const OpDef& op, DeviceBase* device,
                       std::vector<DataType> input_types, std::vector<DataType> output_types)
      : node_(node),
        op_(op),
        device_(device),
        input_types_(std::move(input_types)),
        output_types_(std::move(output_types)) {}

  const proto::NodeDef& node_def() const { return node_; }
  const OpDef& op_def() const { return op_; }
  DeviceBase* device() const { return device_; }
  const std::vector<DataType>& input_types() const { return input_types_; }
  const std::vector<DataType>& output_types() const { return output_types_; }

  template <typename T>
  Status GetAttr(std::string_view name, T* value) const {
    return GetNodeAttr(node_, name, value);
  }

  // Records the first construction error; the kernel is then discarded with that error.
  void SetStatus(const Status& status) {
    if (status_.ok()) status_ = status;
  }
  const Status& status() const { return status_; }

 private:
  const proto::NodeDef& node_;
  const OpDef& op_;
  DeviceBase* device_;
  std::vector<DataType> input_types_;
  std::vector<DataType> output_types_;
  Status status_;
};

class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction* context);
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  // Reads inputs from `context` and sets every output. A returned error fails the step.
  virtual Status Compute(OpKernelContext* context) = 0;

  // Non-null for kernels that complete asynchronously.
  virtual AsyncOpKernel* AsAsync() { return nullptr; }

  // True when the kernel does little work (Const, Identity, shape ops), so an executor runs it
  // inline rather than handing it to another thread. Executors also learn costs by measuring.
  virtual bool IsCheap() const { return false; }

  const proto::NodeDef& def() const { return node_; }
  const std::string& name() const { return node_.name(); }
  const std::string& type_string() const { return node_.op(); }
  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  const std::vector<DataType>& output_types() const { return output_types_; }

  // Where input i must be and output i is put on this kernel's device: kHost for every arg on a
  // device in host memory, else as MemoryTypesForNode says (HostMemory args, resource handles).
  MemoryType input_memory_type(int i) const { return input_memory_types_[i]; }
  MemoryType output_memory_type(int i) const { return output_memory_types_[i]; }
  // The allocator of output i: the device's, or the host's for an output in host memory.
  Allocator* output_allocator(int i) const { return output_allocators_[i]; }

 private:
  const proto::NodeDef node_;
  const std::vector<DataType> input_types_;
  const std::vector<DataType> output_types_;
  std::vector<MemoryType> input_memory_types_;
  std::vector<MemoryType> output_memory_types_;
  std::vector<Allocator*> output_allocators_;
};

class AsyncOpKernel : public OpKernel {
 public:
  using DoneCallback = std::function<void()>;
  using OpKernel::OpKernel;

  // Starts the work and returns; calls `done` exactly once when outputs are set or
  // context->SetStatus() has recorded an error.
  virtual void ComputeAsync(OpKernelContext* context, DoneCallback done) = 0;

  // Runs ComputeAsync and waits; for callers that have no continuation.
  Status Compute(OpKernelContext* context) final;
  AsyncOpKernel* AsAsync() final { return this; }
};

// Everything one Compute call sees: inputs, outputs, the device and the step's shared state.
class OpKernelContext {
 public:
  struct Params {
    int64_t step_id = 0;
    OpKernel* kernel = nullptr;
    DeviceBase* device = nullptr;
    // Input tensors, owned by the executor for the duration of the call. A kernel may move out of
    // an input it forwards to an output (see ForwardInputOrAllocateOutput).
    std::vector<Tensor>* inputs = nullptr;
    CallFrame* call_frame = nullptr;
    CancellationManager* cancellation_manager = nullptr;
    Rendezvous* rendezvous = nullptr;                   // the step's; set when it has partitions
    CollectiveExecutor* collective_executor = nullptr;  // the step's; set when it has partitions
  };

  explicit OpKernelContext(const Params& params);

  int64_t step_id() const { return params_.step_id; }
  const OpKernel& kernel() const { return *params_.kernel; }
  DeviceBase* device() const { return params_.device; }
  CallFrame* call_frame() const { return params_.call_frame; }
  CancellationManager* cancellation_manager() const { return params_.cancellation_manager; }
  Rendezvous* rendezvous() const { return params_.rendezvous; }
  CollectiveExecutor* collective_executor() const { return params_.collective_executor; }

  int num_inputs() const { return static_cast<int>(params_.inputs->size()); }
  const Tensor& input(int i) const { return (*params_.inputs)[i]; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }

  // Allocates output `index` with the kernel's declared output dtype.
  Status AllocateOutput(int index, const TensorShape& shape, Tensor** output);
  // Reuses the buffer of one of `candidate_inputs` for output `index` when that input has the
  // output's dtype and element count and no one else holds its buffer; otherwise allocates.
  Status ForwardInputOrAllocateOutput(std::initializer_list<int> candidate_inputs, int index,
                                      const TensorShape& shape, Tensor** output);
  // Sets output `index` to `value` (sharing its buffer). Its dtype must match the declaration.
  Status SetOutput(int index, Tensor value);
  // A scratch tensor in the device's memory, not an output.
  StatusOr<Tensor> AllocateTemp(DataType dtype, const TensorShape& shape);

  // Records an error from an asynchronous kernel; the first one wins.
  void SetStatus(const Status& status) {
    if (status_.ok()) status_ = status;
  }
  const Status& status() const { return status_; }

  std::vector<Tensor>& outputs() { return outputs_; }

 private:
  Params params_;
  std::vector<Tensor> outputs_;
  Status status_;
};

}  // namespace weft
