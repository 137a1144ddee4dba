#include "weft/runtime/cpu_device.h"

#define EIGEN_USE_THREADS
#include <thread>

#include <cblas.h>
#include <sched.h>
#include <unsupported/Eigen/CXX11/Tensor>

#include "weft/core/thread_pool.h"

namespace weft {

namespace {

// How long idle intra-op threads poll before sleeping. Kernels hand work over every few hundred
// microseconds in a training step; a sleeping thread takes ~30 us to wake (see thread_pool.h).
// Measured on W1 (MLP): 0 us: ~48k images/s, 200 us: ~62-71k, 1000 us: ~71-86k. A device of one
// intra-op thread runs its kernels inline and its pool only runs collective slices: polling after
// them would take the core from the replicas' compute (W1 on 2 devices of 1 thread each).
constexpr int64_t kIntraOpSpinMicros = 1000;

// Lets Eigen expressions schedule onto the device's weft::ThreadPool.
class EigenPoolAdapter final : public Eigen::ThreadPoolInterface {
 public:
  explicit EigenPoolAdapter(ThreadPool* pool) : pool_(pool) {}
  void Schedule(std::function<void()> fn) override { pool_->Schedule(std::move(fn)); }
  int NumThreads() const override { return pool_->NumThreads(); }
  int CurrentThreadId() const override { return pool_->CurrentThreadIndex(); }

 private:
  ThreadPool* pool_;
};

}  // namespace

struct CpuDevice::IntraOpThreads {
  explicit IntraOpThreads(int threads)
      : pool("intra_op", threads, threads > 1 ? kIntraOpSpinMicros : 0),
        adapter(&pool),
        device(&adapter, threads) {}
  ThreadPool pool;
  EigenPoolAdapter adapter;
  Eigen::ThreadPoolDevice device;
};

CpuDevice::CpuDevice(std::string name, int intra_op_threads)
    : Device(std::move(name), "CPU"),
      intra_op_(std::make_unique<IntraOpThreads>(std::max(1, intra_op_threads))) {
  set_intra_op_threads(&intra_op_->pool, &intra_op_->device, std::max(1, intra_op_threads));
}

CpuDevice::~CpuDevice() = default;

int NumSchedulableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace weft

namespace weft {

void ConfigureBlasThreads(int threads) { openblas_set_num_threads(std::max(1, threads)); }

}  // namespace weft
