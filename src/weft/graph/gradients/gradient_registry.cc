#include "weft/graph/gradients/gradient_registry.h"

namespace weft {

void GradientRegistry::Register(std::string op, GradFunc fn) {
  functions_[std::move(op)] = std::move(fn);
}

void GradientRegistry::RegisterNoGradient(std::string op) { functions_[std::move(op)] = nullptr; }

StatusOr<const GradFunc*> GradientRegistry::Lookup(std::string_view op) const {
  auto it = functions_.find(op);
  if (it == functions_.end()) return NotFound("no gradient is registered for op '", op, "'");
  return &it->second;
}

}  // namespace weft
