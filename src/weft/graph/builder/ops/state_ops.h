// Typed builders for the resource-variable ops (see ops/state_ops.cc for their semantics). Ops
// that take a variable handle are placed on the handle's requested device when it has one, so a
// variable and every op touching it stay together; their dtype attr comes from the handle's
// VarHandleOp when visible, so literal values convert to the variable's dtype
// (ops::AssignAddVariableOp(s, counter, 1) on an int64 counter). After an error in the scope each
// returns an empty Output and the scope keeps the error. Ops without outputs return Output(node)
// for use as targets and control dependencies.
#pragma once

#include <string>

#include "weft/graph/builder/node_builder.h"

namespace weft::ops {

struct VarHandleOpAttrs {
  std::string container;
  std::string shared_name;  // empty: the node's name
};

Output VarHandleOp(const Scope& scope, DataType dtype, const PartialShape& shape,
                   const VarHandleOpAttrs& attrs = {});
// `dtype` may be left kInvalid when `resource` comes straight from a VarHandleOp.
Output ReadVariableOp(const Scope& scope, const Input& resource,
                      DataType dtype = DataType::kInvalid);
// Rows `indices` (int32 or int64, any shape) of the variable: an embedding lookup. Placed with the
// variable, so only the ids travel to it and only the rows travel back.
Output ResourceGather(const Scope& scope, const Input& resource, const Input& indices,
                      DataType dtype = DataType::kInvalid);
Output AssignVariableOp(const Scope& scope, const Input& resource, const Input& value);
Output AssignAddVariableOp(const Scope& scope, const Input& resource, const Input& value);
Output AssignSubVariableOp(const Scope& scope, const Input& resource, const Input& value);
Output VarIsInitializedOp(const Scope& scope, const Input& resource);
Output DestroyResourceOp(const Scope& scope, const Input& resource,
                         bool ignore_lookup_error = true);

// Helpers for builders of ops that take a variable handle.
namespace internal {
// The dtype of the variable behind `resource` when it is a VarHandleOp's output, else kInvalid.
DataType HandleDtype(const Input& resource);
// `scope` placed on `resource`'s requested device, when the handle's node has one.
Scope ColocateWithHandle(const Scope& scope, const Input& resource);
}  // namespace internal

}  // namespace weft::ops
