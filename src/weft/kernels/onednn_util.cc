// See onednn_util.h.
#include "weft/kernels/onednn_util.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

namespace weft::kernels {

void UseOneOpenMpThread() {
  thread_local bool done = false;
  if (!done) {
    omp_set_num_threads(1);
    done = true;
  }
}

dnnl::engine& OneDnnCpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

}  // namespace weft::kernels
