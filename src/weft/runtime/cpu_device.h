// CpuDevice: a Device of type "CPU" owning its intra-op worker threads (a spinning weft::ThreadPool
// that kernels reach through intra_op_pool() and, for Eigen expressions, eigen_cpu_device()).
// Several CpuDevices in one process act as separate devices, each with its own share of threads.
// Thread-safe.
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
  struct IntraOpThreads;
  std::unique_ptr<IntraOpThreads> intra_op_;
};

// Cores this process may use (at least 1).
int NumSchedulableCpus();

// Sizes OpenBLAS's own thread pool (process-wide). Left alone it starts one thread per core beside
// Weft's pools, and two pools fighting for the same cores halve throughput.
void ConfigureBlasThreads(int threads);

// What sessions configure: OpenBLAS on the calling thread only, with GEMM-based kernels splitting
// their work over the device's intra-op threads (kernels/gemm.h). Measured on the CNN: OpenBLAS's
// own threads spin in sched_yield between calls and cost a fifth of the cores.
inline void UseSingleThreadedBlas() { ConfigureBlasThreads(1); }

}  // namespace weft
