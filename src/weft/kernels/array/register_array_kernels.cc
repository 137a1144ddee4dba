#include "weft/kernels/register_kernels.h"

namespace weft::kernels {

void RegisterArrayKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace weft::kernels
