#include "weft/framework/op_registry.h"

namespace weft {

Status OpRegistry::Register(const OpDefBuilder& builder) {
  WEFT_ASSIGN_OR_RETURN(OpDef op, builder.Build());
  if (ops_.contains(op.name)) return AlreadyExists("op '", op.name, "' is already registered");
  std::string name = op.name;
  ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(op)));
  return Status::OK();
}

void OpRegistry::RegisterOrDie(const OpDefBuilder& builder) {
  Status status = Register(builder);
  WEFT_CHECK(status.ok()) << status;
}

StatusOr<const OpDef*> OpRegistry::LookUp(std::string_view op_name) const {
  auto it = ops_.find(op_name);
  if (it == ops_.end()) return NotFound("op '", op_name, "' is not registered");
  return it->second.get();
}

std::vector<std::string> OpRegistry::OpNames() const {
  std::vector<std::string> names;
  for (const auto& [name, op] : ops_) names.push_back(name);
  return names;
}

}  // namespace weft
