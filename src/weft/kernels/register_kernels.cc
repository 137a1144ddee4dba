#include "weft/kernels/register_kernels.h"

namespace weft::kernels {

void RegisterAllKernels(KernelRegistry& registry) {
  RegisterArrayKernels(registry);
  RegisterMathKernels(registry);
  RegisterNnKernels(registry);
  RegisterFunctionKernels(registry);
  RegisterStateKernels(registry);
  RegisterSendRecvKernels(registry);
  RegisterCollectiveKernels(registry);
  RegisterIoKernels(registry);
  RegisterDataKernels(registry);
}

const KernelRegistry& AllKernels() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry();
    RegisterAllKernels(*r);
    return r;
  }();
  return *registry;
}

}  // namespace weft::kernels
