#include "weft/kernels/register_kernels.h"

namespace weft::kernels {

void RegisterNnKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace weft::kernels
