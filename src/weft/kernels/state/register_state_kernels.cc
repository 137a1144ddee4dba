// RegisterStateKernels: the list of state kernel families (see state_kernels.h).
#include "weft/kernels/register_kernels.h"
#include "weft/kernels/state/state_kernels.h"

namespace weft::kernels {

void RegisterStateKernels(KernelRegistry& registry) {
  state::RegisterVariableKernels(registry);
  state::RegisterRandomKernels(registry);
  state::RegisterTrainingKernels(registry);
  state::RegisterSparseTrainingKernels(registry);
  state::RegisterStagingKernels(registry);
}

}  // namespace weft::kernels
