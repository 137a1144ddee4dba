#include "weft/cli/blas_environment.h"

#include <cstdlib>

#include <unistd.h>

namespace weft::cli {

const char* PreferredBlasCoreType() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

void EnsureBlasCoreType(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const char* core = PreferredBlasCoreType();
  if (core == nullptr) return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);
  // If re-executing fails we carry on with OpenBLAS's own choice: slower, still correct.
}

}  // namespace weft::cli
