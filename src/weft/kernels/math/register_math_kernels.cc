// RegisterMathKernels: every CPU kernel of the math family (see math_kernels.h).
#include "weft/kernels/math/math_kernels.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {

void RegisterMathKernels(KernelRegistry& registry) {
  RegisterCwiseArithKernels(registry);
  RegisterCwiseDivMaxKernels(registry);
  RegisterCwiseEqualKernels(registry);
  RegisterCwiseCompareKernels(registry);
  RegisterSelectKernels(registry);
  RegisterCwiseUnaryKernels(registry);
  RegisterAddNKernels(registry);
  RegisterMatMulKernels(registry);
  RegisterBatchMatMulKernels(registry);
  RegisterReductionKernels(registry);
  RegisterArgMaxKernels(registry);
  RegisterCastKernels(registry);
  RegisterBroadcastGradientArgsKernels(registry);
}

}  // namespace weft::kernels
