#include "weft/graph/builder/ops/state_ops.h"

#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/ops/op_helpers.h"

namespace weft::ops {

namespace internal {

DataType HandleDtype(const Input& resource) {
  if (resource.is_constant() || !resource.output()) return DataType::kInvalid;
  const Node* node = resource.output().node();
  if (node->type_string() != "VarHandleOp") return DataType::kInvalid;
  DataType dtype = DataType::kInvalid;
  if (!GetNodeAttr(node->def(), "dtype", &dtype).ok()) return DataType::kInvalid;
  return dtype;
}

Scope ColocateWithHandle(const Scope& scope, const Input& resource) {
  if (resource.is_constant() || !resource.output()) return scope;
  const std::string& device = resource.output().node()->requested_device();
  return device.empty() ? scope : scope.WithDevice(device);
}

}  // namespace internal

namespace {

Output NodeOutput(Node* node) { return node ? Output(node, 0) : Output(); }

// Builds `op_type`(resource, value) with dtype taken from the handle when known.
Output UpdateOp(const Scope& scope, std::string_view op_type, const Input& resource,
                const Input& value) {
  NodeBuilder builder(internal::ColocateWithHandle(scope, resource), op_type);
  builder.Input(resource).Input(value);
  DataType dtype = internal::HandleDtype(resource);
  if (dtype != DataType::kInvalid) builder.Attr("dtype", dtype);
  return NodeOutput(builder.Finalize());
}

}  // namespace

Output VarHandleOp(const Scope& scope, DataType dtype, const PartialShape& shape,
                   const VarHandleOpAttrs& attrs) {
  return FirstOutput(NodeBuilder(scope, "VarHandleOp")
                         .Attr("dtype", dtype)
                         .Attr("shape", shape)
                         .Attr("container", std::string_view(attrs.container))
                         .Attr("shared_name", std::string_view(attrs.shared_name)));
}

Output ReadVariableOp(const Scope& scope, const Input& resource, DataType dtype) {
  if (dtype == DataType::kInvalid) dtype = internal::HandleDtype(resource);
  if (dtype == DataType::kInvalid) {
    scope.UpdateStatus(InvalidArgument(
        "ReadVariableOp needs a dtype when its handle does not come from a VarHandleOp"));
    return Output();
  }
  return FirstOutput(NodeBuilder(internal::ColocateWithHandle(scope, resource), "ReadVariableOp")
                         .Input(resource)
                         .Attr("dtype", dtype));
}

Output ResourceGather(const Scope& scope, const Input& resource, const Input& indices,
                      DataType dtype) {
  if (dtype == DataType::kInvalid) dtype = internal::HandleDtype(resource);
  if (dtype == DataType::kInvalid) {
    scope.UpdateStatus(InvalidArgument(
        "ResourceGather needs a dtype when its handle does not come from a VarHandleOp"));
    return Output();
  }
  return FirstOutput(NodeBuilder(internal::ColocateWithHandle(scope, resource), "ResourceGather")
                         .Input(resource)
                         .Input(indices)
                         .Attr("dtype", dtype));
}

Output AssignVariableOp(const Scope& scope, const Input& resource, const Input& value) {
  return UpdateOp(scope, "AssignVariableOp", resource, value);
}

Output AssignAddVariableOp(const Scope& scope, const Input& resource, const Input& value) {
  return UpdateOp(scope, "AssignAddVariableOp", resource, value);
}

Output AssignSubVariableOp(const Scope& scope, const Input& resource, const Input& value) {
  return UpdateOp(scope, "AssignSubVariableOp", resource, value);
}

Output VarIsInitializedOp(const Scope& scope, const Input& resource) {
  return FirstOutput(
      NodeBuilder(internal::ColocateWithHandle(scope, resource), "VarIsInitializedOp")
          .Input(resource));
}

Output DestroyResourceOp(const Scope& scope, const Input& resource, bool ignore_lookup_error) {
  return NodeOutput(NodeBuilder(internal::ColocateWithHandle(scope, resource), "DestroyResourceOp")
                        .Input(resource)
                        .Attr("ignore_lookup_error", ignore_lookup_error)
                        .Finalize());
}

}  // namespace weft::ops
