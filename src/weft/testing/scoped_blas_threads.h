// ScopedBlasThreads: sets OpenBLAS's process-wide thread count for a test scope and restores the
// previous count after. GEMM-based kernels choose how to use the cores from it (kernels/gemm.h).
// Not thread-safe: use from a test's main thread while no kernel runs.
#pragma once

#include <cblas.h>

#include "weft/runtime/cpu_device.h"

namespace weft::testing {

class ScopedBlasThreads {
 public:
  explicit ScopedBlasThreads(int threads) : saved_(openblas_get_num_threads()) {
    ConfigureBlasThreads(threads);
  }
  ~ScopedBlasThreads() { ConfigureBlasThreads(saved_); }
  ScopedBlasThreads(const ScopedBlasThreads&) = delete;
  ScopedBlasThreads& operator=(const ScopedBlasThreads&) = delete;

 private:
  int saved_;
};

}  // namespace weft::testing
