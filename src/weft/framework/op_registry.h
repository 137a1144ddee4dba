// OpRegistry: name -> OpDef. Filled explicitly by the ops layer (ops::RegisterAllOps); looked up
// by graph construction, validation and kernel creation. Register is not thread-safe and happens
// before use; LookUp is safe from any thread once registration is done.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/framework/op_def.h"

namespace weft {

class OpRegistry {
 public:
  OpRegistry() = default;
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // Builds and adds an op; a malformed spec or a second op of the same name is an error.
  Status Register(const OpDefBuilder& builder);
  // Like Register, but a spec error is a bug in Weft's own op list: checked.
  void RegisterOrDie(const OpDefBuilder& builder);

  // NotFound naming the op when it is not registered.
  StatusOr<const OpDef*> LookUp(std::string_view op_name) const;
  std::vector<std::string> OpNames() const;

 private:
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

}  // namespace weft
