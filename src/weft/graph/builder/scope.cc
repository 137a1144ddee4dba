#include "weft/graph/builder/scope.h"

#include "weft/ops/register_ops.h"

namespace weft {

std::string Output::name() const {
  if (node_ == nullptr) return "<invalid output>";
  return index_ == 0 ? node_->name() : StrCat(node_->name(), ":", index_);
}

Scope Scope::NewRootScope() { return NewRootScope(ops::AllOps()); }

Scope Scope::NewRootScope(const OpRegistry& registry) {
  auto state = std::make_shared<SharedState>();
  state->graph = std::make_shared<Graph>(registry);
  state->status = std::make_shared<Status>();
  state->name_counts = std::make_shared<std::map<std::string, int>>();
  return Scope(std::move(state));
}

std::string Scope::Prefixed(std::string_view name) const {
  return prefix_.empty() ? std::string(name) : StrCat(prefix_, "/", name);
}

std::string Scope::MakeUnique(const std::string& name) const {
  auto& counts = *state_->name_counts;
  auto it = counts.find(name);
  if (it == counts.end() && graph()->FindNode(name) == nullptr) {
    counts[name] = 0;
    return name;
  }
  int& count = counts[name];
  std::string candidate;
  do {
    candidate = StrCat(name, "_", ++count);
  } while (counts.contains(candidate) || graph()->FindNode(candidate) != nullptr);
  counts[candidate] = 0;
  return candidate;
}

Scope Scope::NewSubScope(std::string_view child) const {
  Scope scope = *this;
  scope.op_name_.clear();
  if (!child.empty()) scope.prefix_ = MakeUnique(Prefixed(child));
  return scope;
}

Scope Scope::WithRootNameScope() const {
  Scope scope = *this;
  scope.op_name_.clear();
  scope.prefix_.clear();
  return scope;
}

Scope Scope::WithOpName(std::string_view name) const {
  Scope scope = *this;
  scope.op_name_ = std::string(name);
  return scope;
}

Scope Scope::WithDevice(std::string_view device) const {
  Scope scope = *this;
  scope.device_ = std::string(device);
  return scope;
}

Scope Scope::WithControlDependencies(const std::vector<Output>& deps) const {
  Scope scope = *this;
  for (const Output& dep : deps) {
    if (dep.node() != nullptr) scope.control_deps_.push_back(dep.node());
  }
  return scope;
}

Scope Scope::WithNoControlDependencies() const {
  Scope scope = *this;
  scope.control_deps_.clear();
  return scope;
}

void Scope::UpdateStatus(const Status& status) const {
  if (state_->status->ok() && !status.ok()) *state_->status = status;
}

StatusOr<proto::GraphDef> Scope::ToGraphDef() const {
  if (!ok()) return status();
  return graph()->ToGraphDef();
}

std::string Scope::GetUniqueNameForOp(std::string_view op_type) const {
  return MakeUnique(Prefixed(op_name_.empty() ? op_type : std::string_view(op_name_)));
}

}  // namespace weft
