#include "weft/testing/test_arena_device.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "weft/core/str_util.h"
#include "weft/core/tensor.h"
#include "weft/kernels/register_kernels.h"
#include "weft/runtime/cpu_device.h"

namespace weft::testing {
namespace {

std::atomic<int64_t> host_to_device{0};
std::atomic<int64_t> device_to_host{0};
std::atomic<int64_t> device_to_device{0};
std::atomic<int64_t> copied_bytes{0};

// Memory of its own: blocks of the system allocator, counted apart from the host's. It lives while
// its device or any of its blocks does (tensors of the device, in its ResourceMgr or fetched by a
// test, may outlive the device): the device and every live block each hold a reference.
class ArenaAllocator final : public Allocator {
 public:
  explicit ArenaAllocator(std::string name) : name_(std::move(name)) {}
  // Drops one reference; the last one deletes the arena.
  void Unref() {
    if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  std::string Name() const override { return name_; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kTensorAlignment) {
      return nullptr;
    }
    size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    void* pointer = std::aligned_alloc(kTensorAlignment, rounded == 0 ? kTensorAlignment : rounded);
    if (pointer == nullptr) return nullptr;
    references_.fetch_add(1, std::memory_order_relaxed);
    allocations_.fetch_add(1);
    int64_t now =
        bytes_in_use_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return pointer;
  }
  void DeallocateRaw(void* pointer, size_t bytes) override {
    if (pointer == nullptr) return;
    bytes_in_use_.fetch_sub(static_cast<int64_t>(bytes));
    std::free(pointer);
    Unref();
  }
  AllocatorStats GetStats() const override {
    return AllocatorStats{bytes_in_use_.load(), peak_.load(), allocations_.load(), 0};
  }
  MemoryType memory_type() const override { return MemoryType::kDevice; }

 private:
  const std::string name_;
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> allocations_{0};
  std::atomic<int64_t> references_{1};  // the device's
};

Status CheckCopy(const char* what, const Tensor* src, const Allocator* src_memory,
                 const Tensor* dst, const Allocator* dst_memory) {
  auto in = [](const Tensor* t, const Allocator* memory) {
    return memory == nullptr ? t->IsInHostMemory() : t->allocator() == memory;
  };
  if (src == nullptr || dst == nullptr || !in(src, src_memory) || !in(dst, dst_memory)) {
    return Internal(what, ": source or destination is not in the memory the copy claims");
  }
  if (src->dtype() != dst->dtype() || !(src->shape() == dst->shape())) {
    return Internal(what, ": source and destination differ in dtype or shape");
  }
  return Status::OK();
}

void Copy(const Tensor* src, Tensor* dst, std::atomic<int64_t>& counter) {
  if (src->TotalBytes() > 0) std::memcpy(dst->raw_data(), src->raw_data(), src->TotalBytes());
  counter.fetch_add(1);
  copied_bytes.fetch_add(static_cast<int64_t>(src->TotalBytes()));
}

class CountingDeviceContext final : public DeviceContext {
 public:
  explicit CountingDeviceContext(const Allocator* arena) : arena_(arena) {}

  void CopyCPUTensorToDeviceAsync(const Tensor* cpu_tensor, DeviceBase* device,
                                  Tensor* device_tensor, StatusCallback done) override {
    Status status = CheckCopy("host to device", cpu_tensor, nullptr, device_tensor,
                              device ? device->GetAllocator() : nullptr);
    if (status.ok() && device->GetAllocator() != arena_) {
      status = Internal("host to device: ", device->name(), " is not this context's device");
    }
    if (status.ok()) Copy(cpu_tensor, device_tensor, host_to_device);
    done(status);
  }
  void CopyDeviceTensorToCPUAsync(const Tensor* device_tensor, DeviceBase* /*device*/,
                                  Tensor* cpu_tensor, StatusCallback done) override {
    Status status = CheckCopy("device to host", device_tensor, arena_, cpu_tensor, nullptr);
    if (status.ok()) Copy(device_tensor, cpu_tensor, device_to_host);
    done(status);
  }
  void CopyDeviceTensorToDeviceAsync(const Tensor* src_tensor, DeviceBase* dst_device,
                                     Tensor* dst_tensor, StatusCallback done) override {
    Status status = CheckCopy("device to device", src_tensor, arena_, dst_tensor,
                              dst_device ? dst_device->GetAllocator() : nullptr);
    if (status.ok() && dst_device->HasHostMemory()) {
      status = Internal("device to device: ", dst_device->name(), " is in host memory");
    }
    if (status.ok()) Copy(src_tensor, dst_tensor, device_to_device);
    done(status);
  }

 private:
  const Allocator* const arena_;
};

class TestArenaDevice final : public Device {
 public:
  TestArenaDevice(const std::string& name, int intra_op_threads)
      : Device(name, kTestArenaDeviceType),
        threads_(std::make_unique<CpuDevice>(name + "/threads", intra_op_threads)),
        arena_(new ArenaAllocator(name.substr(name.rfind('/') + 1))),
        context_(std::make_unique<CountingDeviceContext>(arena_)) {
    set_intra_op_threads(threads_->intra_op_pool(), threads_->eigen_cpu_device(),
                         threads_->intra_op_threads());
    set_memory(arena_, context_.get());
  }
  ~TestArenaDevice() override { arena_->Unref(); }

 private:
  const std::unique_ptr<CpuDevice> threads_;  // the intra-op threads, borrowed from a CpuDevice
  ArenaAllocator* const arena_;               // one of its references; see ArenaAllocator
  const std::unique_ptr<CountingDeviceContext> context_;
};

class TestArenaDeviceFactory final : public DeviceFactory {
 public:
  StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(
      const DeviceFactoryOptions& options) const override {
    std::vector<std::unique_ptr<Device>> devices;
    for (int i = 0; i < options.count; ++i) {
      devices.push_back(
          NewTestArenaDevice(StrCat(options.name_prefix, "/device:", kTestArenaDeviceType, ":", i),
                             options.intra_op_threads));
    }
    return devices;
  }
};

}  // namespace

ArenaCopyStats GetArenaCopyStats() {
  return ArenaCopyStats{host_to_device.load(), device_to_host.load(), device_to_device.load(),
                        copied_bytes.load()};
}

void ResetArenaCopyStats() {
  host_to_device.store(0);
  device_to_host.store(0);
  device_to_device.store(0);
  copied_bytes.store(0);
}

std::unique_ptr<Device> NewTestArenaDevice(const std::string& name, int intra_op_threads) {
  return std::make_unique<TestArenaDevice>(name, intra_op_threads);
}

void RegisterTestArenaDeviceFactory(DeviceFactoryRegistry& registry) {
  WEFT_CHECK(
      registry.Register(kTestArenaDeviceType, std::make_unique<TestArenaDeviceFactory>()).ok());
}

const DeviceFactoryRegistry& TestArenaDeviceFactories() {
  static const DeviceFactoryRegistry* const registry = [] {
    auto* r = new DeviceFactoryRegistry();
    RegisterCpuDeviceFactory(*r);
    RegisterTestArenaDeviceFactory(*r);
    return r;
  }();
  return *registry;
}

const KernelRegistry& TestArenaKernels() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry();
    kernels::RegisterAllKernels(*r);
    r->CopyDeviceKernels("CPU", kTestArenaDeviceType);
    return r;
  }();
  return *registry;
}

SessionOptions SessionOptionsFor(const std::string& device_type, int devices) {
  SessionOptions options;
  (*options.config.mutable_device_count())[device_type] = devices;
  if (device_type == kTestArenaDeviceType) {
    options.device_factories = &TestArenaDeviceFactories();
    options.kernel_registry = &TestArenaKernels();
  }
  return options;
}

}  // namespace weft::testing
