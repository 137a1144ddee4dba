// CpuDevice: a Device of type "CPU" owning its intra-op worker threads (an Eigen thread pool that
// kernels reach through eigen_cpu_device()). Several CpuDevices in one process act as separate
// devices, each with its own share of threads. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "weft/runtime/device.h"

namespace weft {

class CpuDevice final : public Device {
 public:
  // `intra_op_threads` >= 1 threads for parallel kernels.
  CpuDevice(std::string name, int intra_op_threads);
  ~CpuDevice() override;

 private:
  struct EigenThreads;
  std::unique_ptr<EigenThreads> eigen_;
};

// Cores this process may use (at least 1).
int NumSchedulableCpus();

// Sizes OpenBLAS's own thread pool (process-wide). Left alone it starts one thread per core beside
// Weft's pools, and two pools fighting for the same cores halve throughput.
void ConfigureBlasThreads(int threads);

}  // namespace weft
