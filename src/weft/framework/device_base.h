// DeviceBase: what a kernel may ask of the device it runs on — its name and type, and the CPU
// worker threads for intra-op parallelism (a weft::ThreadPool, also wrapped as an Eigen
// ThreadPoolDevice for Eigen expressions). Runtime devices derive from
// it; tests can use it directly. Each device owns a ResourceMgr holding the resources (variables)
// that live on it. Immutable after construction (the ResourceMgr synchronises itself); safe from
// any thread.
#pragma once

#include <memory>
#include <string>

#include "weft/framework/resource_mgr.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace weft {

class ThreadPool;

class DeviceBase {
 public:
  DeviceBase(std::string name, std::string device_type)
      : name_(std::move(name)),
        device_type_(std::move(device_type)),
        resource_manager_(std::make_unique<ResourceMgr>()) {}
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

  // The resources (variables) living on this device; owned by the device, never null.
  ResourceMgr* resource_manager() const { return resource_manager_.get(); }

 protected:
  void set_intra_op_threads(ThreadPool* pool, const Eigen::ThreadPoolDevice* device, int threads) {
    intra_op_pool_ = pool;
    eigen_cpu_device_ = device;
    intra_op_threads_ = threads;
  }

 private:
  const std::string name_;
  const std::string device_type_;
  const std::unique_ptr<ResourceMgr> resource_manager_;
  ThreadPool* intra_op_pool_ = nullptr;
  const Eigen::ThreadPoolDevice* eigen_cpu_device_ = nullptr;
  int intra_op_threads_ = 1;
};

}  // namespace weft
