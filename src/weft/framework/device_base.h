// DeviceBase: what a kernel may ask of the device it runs on — its name and type, the allocator of
// its memory, the DeviceContext that copies tensors into and out of that memory and orders the
// device's asynchronous work (null when the device computes in host memory), and the CPU worker
// threads for intra-op parallelism (a weft::ThreadPool, also wrapped as an Eigen ThreadPoolDevice
// for Eigen expressions). Runtime devices derive from it; tests can use it directly. Each device
// owns a ResourceMgr holding the resources (variables) that live on it. Immutable after
// construction (the ResourceMgr synchronises itself); safe from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "weft/core/allocator.h"
#include "weft/core/status.h"
#include "weft/framework/resource_mgr.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace weft {

class DeviceBase;
class Tensor;
class ThreadPool;

// Copies between a device's own memory and host memory, or another device's memory, and the
// device's stream. Every copy is asynchronous: it returns at once and calls `done` exactly once, on
// some thread, when the destination holds the bytes (or with the error that stopped it). The
// destination tensor is allocated by the caller (same dtype and shape as the source) in the memory
// the copy writes, and the caller keeps both tensors alive until `done`. Thread-safe.
//
// The stream (the reference's name for an accelerator's queue of work): on a device whose kernels
// finish after Compute returns, IsAsync() is true and work runs in the order it was enqueued. The
// executor launches each kernel onto it, and its copies are ordered on it behind the work enqueued
// before them (out of the device: on the source's stream; into it: on the destination's). Whoever
// reads a value off the stream waits for it with ThenExecute. A synchronous device keeps the
// defaults below, under which all of this runs inline.
class DeviceContext {
 public:
  virtual ~DeviceContext() = default;

  // Whether the device's work completes after the call that enqueued it returns.
  virtual bool IsAsync() const { return false; }
  // Runs `work` on the stream after all work enqueued before it has completed. `work` must not
  // wait for later work of the same stream.
  virtual void Enqueue(std::function<void()> work) { work(); }
  // Calls `callback`, on some thread, once all work enqueued so far has completed (an event
  // recorded on the stream). It must not wait for later work of the stream either.
  virtual void ThenExecute(std::function<void()> callback) { callback(); }

  // Host -> `device`'s memory.
  virtual void CopyCPUTensorToDeviceAsync(const Tensor* cpu_tensor, DeviceBase* device,
                                          Tensor* device_tensor, StatusCallback done) = 0;
  // `device`'s memory -> host.
  virtual void CopyDeviceTensorToCPUAsync(const Tensor* device_tensor, DeviceBase* device,
                                          Tensor* cpu_tensor, StatusCallback done) = 0;
  // The memory of this context's device -> `dst_device`'s memory (another device).
  virtual void CopyDeviceTensorToDeviceAsync(const Tensor* src_tensor, DeviceBase* dst_device,
                                             Tensor* dst_tensor, StatusCallback done) = 0;
};

class DeviceBase {
 public:
  DeviceBase(std::string name, std::string device_type)
      : name_(std::move(name)),
        device_type_(std::move(device_type)),
        owned_resource_manager_(std::make_unique<ResourceMgr>()),
        resource_manager_(owned_resource_manager_.get()) {}
  virtual ~DeviceBase() = default;
  DeviceBase(const DeviceBase&) = delete;
  DeviceBase& operator=(const DeviceBase&) = delete;

  // Full name, e.g. "/job:localhost/replica:0/task:0/device:CPU:0".
  const std::string& name() const { return name_; }
  // "CPU".
  const std::string& device_type() const { return device_type_; }

  // Intra-op threads for kernels; set by the device before any kernel runs. Never null for CPU.
  // A parallel loop uses at most intra_op_threads() shards, one of them on the calling thread.
  const Eigen::ThreadPoolDevice* eigen_cpu_device() const { return eigen_cpu_device_; }
  ThreadPool* intra_op_pool() const { return intra_op_pool_; }
  int intra_op_threads() const { return intra_op_threads_; }

  // The resources (variables) living on this device; never null. Owned by the device unless it
  // shares another device's (share_resource_manager).
  ResourceMgr* resource_manager() const { return resource_manager_; }

  // Where tensors of this device live: its own memory, or host memory when `attributes.on_host`.
  // Never null (host memory unless the device set another). A plain load, no virtual call: kernels
  // call it for every output.
  Allocator* GetAllocator(AllocatorAttributes attributes = {}) const {
    return attributes.on_host ? HostAllocator() : allocator_;
  }
  // Whether the device computes in host memory, so no tensor of it ever needs a copy.
  bool HasHostMemory() const { return allocator_->memory_type() == MemoryType::kHost; }
  // Copies into and out of the device's memory; null for a device in host memory.
  DeviceContext* device_context() const { return device_context_; }

 protected:
  // Set by a device with memory of its own before any kernel runs; both outlive the device's use.
  void set_memory(Allocator* allocator, DeviceContext* device_context) {
    allocator_ = allocator;
    device_context_ = device_context;
  }

  // Makes this device use `shared`'s resources (a view of a device for one session that shares
  // state with the others); `shared` outlives this device. Before any kernel runs.
  void share_resource_manager(ResourceMgr* shared) { resource_manager_ = shared; }

  void set_intra_op_threads(ThreadPool* pool, const Eigen::ThreadPoolDevice* device, int threads) {
    intra_op_pool_ = pool;
    eigen_cpu_device_ = device;
    intra_op_threads_ = threads;
  }

 private:
  const std::string name_;
  const std::string device_type_;
  const std::unique_ptr<ResourceMgr> owned_resource_manager_;
  ResourceMgr* resource_manager_;
  Allocator* allocator_ = HostAllocator();
  DeviceContext* device_context_ = nullptr;
  ThreadPool* intra_op_pool_ = nullptr;
  const Eigen::ThreadPoolDevice* eigen_cpu_device_ = nullptr;
  int intra_op_threads_ = 1;
};

}  // namespace weft
