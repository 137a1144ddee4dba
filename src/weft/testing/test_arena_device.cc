#include "weft/testing/test_arena_device.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>

#include "weft/core/mutex.h"
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

// The stream of a TEST_ARENA device: its kernels and copies run, in the order enqueued, on one
// thread of its own, so they complete after the calls that launched them return, as an
// accelerator's do. Once shut down (its device is gone) work runs inline on the caller.
class ArenaStream {
 public:
  ArenaStream() : thread_([this] { Loop(); }), thread_id_(thread_.get_id()) {}
  ~ArenaStream() { Shutdown(); }
  ArenaStream(const ArenaStream&) = delete;
  ArenaStream& operator=(const ArenaStream&) = delete;

  void Enqueue(std::function<void()> work) {
    {
      MutexLock lock(mu_);
      if (!stopped_) {
        queue_.push_back(std::move(work));
        wake_.NotifyOne();
        return;
      }
    }
    work();
  }
  bool OnStreamThread() const { return std::this_thread::get_id() == thread_id_; }

  // Runs what is queued (and what that enqueues), then ends the thread. Not on the stream itself;
  // not concurrently with itself (the device's destructor, then the last owner's).
  void Shutdown() {
    if (!thread_.joinable()) return;
    WEFT_CHECK(!OnStreamThread()) << "a TEST_ARENA stream cannot be shut down from its own work";
    {
      MutexLock lock(mu_);
      stopping_ = true;
      wake_.NotifyOne();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    while (true) {
      std::function<void()> work;
      {
        MutexLock lock(mu_);
        while (queue_.empty() && !stopping_) wake_.Wait(lock);
        if (queue_.empty()) {
          stopped_ = true;
          return;
        }
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      work();
    }
  }

  Mutex mu_;
  CondVar wake_;
  std::deque<std::function<void()>> queue_ WEFT_GUARDED_BY(mu_);
  bool stopping_ WEFT_GUARDED_BY(mu_) = false;
  bool stopped_ WEFT_GUARDED_BY(mu_) = false;  // the thread has ended: work runs inline
  std::thread thread_;
  const std::thread::id thread_id_;
};

// Memory of its own: blocks of the system allocator, counted apart from the host's. It lives while
// its device or any of its blocks does (tensors of the device, in its ResourceMgr or fetched by a
// test, may outlive the device): the device and every live block each hold a reference. A block
// freed off the stream is released in stream order (the reference's deferred deallocation), so
// memory that launched work may still touch is not handed out again before the stream passes it.
class ArenaAllocator final : public Allocator {
 public:
  ArenaAllocator(std::string name, std::shared_ptr<ArenaStream> stream)
      : name_(std::move(name)), stream_(std::move(stream)) {}
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
    if (!stream_->OnStreamThread()) {
      stream_->Enqueue([this, pointer, bytes] { Release(pointer, bytes); });
      return;
    }
    Release(pointer, bytes);
  }
  AllocatorStats GetStats() const override {
    return AllocatorStats{bytes_in_use_.load(), peak_.load(), allocations_.load(), 0};
  }
  MemoryType memory_type() const override { return MemoryType::kDevice; }

 private:
  void Release(void* pointer, size_t bytes) {
    bytes_in_use_.fetch_sub(static_cast<int64_t>(bytes));
    std::free(pointer);
    Unref();
  }

  const std::string name_;
  const std::shared_ptr<ArenaStream> stream_;  // outlives the device while blocks live
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

// Checks and counts every copy; each runs on the stream, after the work enqueued before it.
class CountingDeviceContext final : public DeviceContext {
 public:
  CountingDeviceContext(const Allocator* arena, ArenaStream* stream)
      : arena_(arena), stream_(stream) {}

  bool IsAsync() const override { return true; }
  void Enqueue(std::function<void()> work) override { stream_->Enqueue(std::move(work)); }
  // One thread runs the stream in order, so a callback enqueued now runs after all before it.
  void ThenExecute(std::function<void()> callback) override {
    stream_->Enqueue(std::move(callback));
  }

  void CopyCPUTensorToDeviceAsync(const Tensor* cpu_tensor, DeviceBase* device,
                                  Tensor* device_tensor, StatusCallback done) override {
    stream_->Enqueue([this, cpu_tensor, device, device_tensor, done = std::move(done)] {
      CopyToDevice(cpu_tensor, device, device_tensor, done);
    });
  }
  void CopyDeviceTensorToCPUAsync(const Tensor* device_tensor, DeviceBase* /*device*/,
                                  Tensor* cpu_tensor, StatusCallback done) override {
    stream_->Enqueue([this, device_tensor, cpu_tensor, done = std::move(done)] {
      Status status = CheckCopy("device to host", device_tensor, arena_, cpu_tensor, nullptr);
      if (status.ok()) Copy(device_tensor, cpu_tensor, device_to_host);
      done(status);
    });
  }
  void CopyDeviceTensorToDeviceAsync(const Tensor* src_tensor, DeviceBase* dst_device,
                                     Tensor* dst_tensor, StatusCallback done) override {
    stream_->Enqueue([this, src_tensor, dst_device, dst_tensor, done = std::move(done)] {
      CopyToOtherDevice(src_tensor, dst_device, dst_tensor, done);
    });
  }

 private:
  void CopyToDevice(const Tensor* cpu_tensor, DeviceBase* device, Tensor* device_tensor,
                    const StatusCallback& done) {
    Status status = CheckCopy("host to device", cpu_tensor, nullptr, device_tensor,
                              device ? device->GetAllocator() : nullptr);
    if (status.ok() && device->GetAllocator() != arena_) {
      status = Internal("host to device: ", device->name(), " is not this context's device");
    }
    if (status.ok()) Copy(cpu_tensor, device_tensor, host_to_device);
    done(status);
  }
  void CopyToOtherDevice(const Tensor* src_tensor, DeviceBase* dst_device, Tensor* dst_tensor,
                         const StatusCallback& done) {
    Status status = CheckCopy("device to device", src_tensor, arena_, dst_tensor,
                              dst_device ? dst_device->GetAllocator() : nullptr);
    if (status.ok() && dst_device->HasHostMemory()) {
      status = Internal("device to device: ", dst_device->name(), " is in host memory");
    }
    if (status.ok()) Copy(src_tensor, dst_tensor, device_to_device);
    done(status);
  }

  const Allocator* const arena_;
  ArenaStream* const stream_;
};

class TestArenaDevice final : public Device {
 public:
  TestArenaDevice(const std::string& name, int intra_op_threads)
      : Device(name, kTestArenaDeviceType),
        threads_(std::make_unique<CpuDevice>(name + "/threads", intra_op_threads)),
        stream_(std::make_shared<ArenaStream>()),
        arena_(new ArenaAllocator(name.substr(name.rfind('/') + 1), stream_)),
        context_(std::make_unique<CountingDeviceContext>(arena_, stream_.get())) {
    set_intra_op_threads(threads_->intra_op_pool(), threads_->eigen_cpu_device(),
                         threads_->intra_op_threads());
    set_memory(arena_, context_.get());
  }
  // Finishes the stream's work first: it runs kernels on the intra-op threads.
  ~TestArenaDevice() override {
    stream_->Shutdown();
    arena_->Unref();
  }

 private:
  const std::unique_ptr<CpuDevice> threads_;   // the intra-op threads, borrowed from a CpuDevice
  const std::shared_ptr<ArenaStream> stream_;  // shared with the arena, which may outlive us
  ArenaAllocator* const arena_;                // one of its references; see ArenaAllocator
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
