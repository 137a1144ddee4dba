// OpenBLAS chooses its GEMM kernels by CPU model when it is loaded; Debian's 0.3.21 does not know
// newer Xeons (model 207 here) and falls back to SSE3 kernels, 5-9x slower. OPENBLAS_CORETYPE
// must therefore be set before the library loads: EnsureBlasCoreType re-executes the process with
// it set (once) when the user has not set it.
#pragma once

namespace weft::cli {

// Returns normally when the environment is already right (or cannot be fixed); otherwise replaces
// the process with itself under the right OPENBLAS_CORETYPE.
void EnsureBlasCoreType(char** argv);

// The OpenBLAS core type this CPU should use ("SkylakeX", "Haswell"), or nullptr to leave it to
// OpenBLAS.
const char* PreferredBlasCoreType();

}  // namespace weft::cli
