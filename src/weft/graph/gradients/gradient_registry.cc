#include "weft/graph/gradients/gradient_registry.h"

namespace weft {

void GradientRegistry::Register(std::string op, GradFunc fn) {
  entries_[std::move(op)] = Entry{std::move(fn), ""};
}

void GradientRegistry::RegisterNoGradient(std::string op) {
  entries_[std::move(op)] = Entry{nullptr, ""};
}

void GradientRegistry::RegisterNotDifferentiable(std::string op, std::string reason) {
  if (reason.empty()) reason = "no reason given";
  entries_[std::move(op)] = Entry{nullptr, std::move(reason)};
}

StatusOr<const GradFunc*> GradientRegistry::Lookup(std::string_view op) const {
  auto it = entries_.find(op);
  if (it == entries_.end()) return NotFound("no gradient is registered for op '", op, "'");
  if (!it->second.not_differentiable_why.empty()) {
    return InvalidArgument("op '", op,
                           "' is not differentiable: ", it->second.not_differentiable_why);
  }
  return &it->second.fn;
}

std::vector<std::string> GradientRegistry::OpNames() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

}  // namespace weft
