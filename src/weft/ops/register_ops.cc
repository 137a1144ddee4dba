#include "weft/ops/register_ops.h"

namespace weft::ops {

void RegisterAllOps(OpRegistry& registry) {
  RegisterArrayOps(registry);
  RegisterMathOps(registry);
  RegisterNnOps(registry);
  RegisterFunctionOps(registry);
  RegisterStateOps(registry);
  RegisterRandomOps(registry);
  RegisterTrainingOps(registry);
  RegisterSendRecvOps(registry);
  RegisterCollectiveOps(registry);
  RegisterIoOps(registry);
  RegisterDatasetOps(registry);
}

const OpRegistry& AllOps() {
  static const OpRegistry* const registry = [] {
    auto* r = new OpRegistry();
    RegisterAllOps(*r);
    return r;
  }();
  return *registry;
}

}  // namespace weft::ops
