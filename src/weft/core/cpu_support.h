// Whether this CPU runs the instruction set Weft was compiled for. The build targets an x86-64
// level (CMake's WEFT_X86_64_LEVEL, default x86-64-v3: AVX2, FMA, BMI2; every x86-64 server CPU
// since 2015), so a CPU below it would fault on the first vector instruction; CreateLocalDevices
// and the `weft` binary ask here first and refuse to start with this Status instead. Stateless,
// thread-safe; compiled for plain x86-64 itself so that asking is always safe.
#pragma once

#include "weft/core/status.h"

namespace weft {

// OK when the CPU has every feature of the build's level (always OK for a -march=native build or
// another architecture); else FailedPrecondition naming the level, the missing features and the
// CMake option that builds for this CPU.
Status CheckCpuSupportsBuild();

}  // namespace weft
