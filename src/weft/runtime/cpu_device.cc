#include "weft/runtime/cpu_device.h"

#define EIGEN_USE_THREADS
#include <thread>

#include <cblas.h>
#include <sched.h>
#include <unsupported/Eigen/CXX11/Tensor>

namespace weft {

struct CpuDevice::EigenThreads {
  explicit EigenThreads(int threads) : pool(threads), device(&pool, threads) {}
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

CpuDevice::CpuDevice(std::string name, int intra_op_threads)
    : Device(std::move(name), "CPU"),
      eigen_(std::make_unique<EigenThreads>(std::max(1, intra_op_threads))) {
  set_eigen_cpu_device(&eigen_->device, std::max(1, intra_op_threads));
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
