#include "weft/core/cpu_support.h"

#include <string>
#include <vector>

#include "weft/core/str_util.h"

#ifndef WEFT_X86_64_LEVEL
#define WEFT_X86_64_LEVEL 0  // not x86-64, or -march=native: nothing to check
#endif

namespace weft {

Status CheckCpuSupportsBuild() {
#if defined(__x86_64__) && WEFT_X86_64_LEVEL >= 2
  __builtin_cpu_init();
  std::vector<std::string> missing;
  auto need = [&missing](bool present, const char* feature) {
    if (!present) missing.push_back(feature);
  };
  // The builtin takes only string literals, so each feature is spelled out.
  need(__builtin_cpu_supports("sse4.2"), "sse4.2");
  need(__builtin_cpu_supports("popcnt"), "popcnt");
#if WEFT_X86_64_LEVEL >= 3
  need(__builtin_cpu_supports("avx"), "avx");
  need(__builtin_cpu_supports("avx2"), "avx2");
  need(__builtin_cpu_supports("fma"), "fma");
  need(__builtin_cpu_supports("bmi"), "bmi");
  need(__builtin_cpu_supports("bmi2"), "bmi2");
#endif
#if WEFT_X86_64_LEVEL >= 4
  need(__builtin_cpu_supports("avx512f"), "avx512f");
  need(__builtin_cpu_supports("avx512bw"), "avx512bw");
  need(__builtin_cpu_supports("avx512dq"), "avx512dq");
  need(__builtin_cpu_supports("avx512vl"), "avx512vl");
#endif
  if (!missing.empty()) {
    return FailedPrecondition("this Weft was built for x86-64-v", WEFT_X86_64_LEVEL,
                              ", but this CPU lacks ", StrJoin(missing, ", "),
                              "; rebuild with -DWEFT_X86_64_LEVEL=x86-64 (or -DWEFT_NATIVE=ON)");
  }
#endif
  return Status::OK();
}

}  // namespace weft
