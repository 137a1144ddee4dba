#include "weft/framework/node_def_util.h"

#include <algorithm>
#include <charconv>

#include "weft/framework/attr_value_util.h"
#include "weft/framework/tensor_proto_util.h"

namespace weft {

std::string FormatNodeForError(const proto::NodeDef& node) {
  return StrCat("node '", node.name(), "' (", node.op(), ")");
}

StatusOr<TensorId> ParseTensorName(std::string_view name) {
  TensorId id;
  if (name.starts_with("^")) {
    id.node = name.substr(1);
    id.index = -1;
  } else if (size_t colon = name.rfind(':'); colon != std::string_view::npos) {
    id.node = name.substr(0, colon);
    std::string_view digits = name.substr(colon + 1);
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), id.index);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
        id.index < 0) {
      return InvalidArgument("tensor name '", name, "' has a bad output index");
    }
  } else {
    id.node = name;
  }
  if (id.node.empty()) return InvalidArgument("tensor name '", name, "' names no node");
  return id;
}

void AddDefaultsToNodeDef(const OpDef& op, proto::NodeDef* node) {
  for (const AttrDef& attr : op.attrs) {
    if (attr.default_value.has_value() && !node->attr().contains(attr.name)) {
      (*node->mutable_attr())[attr.name] = *attr.default_value;
    }
  }
}

namespace {

Status CheckAllowedType(const proto::NodeDef& node, const AttrDef& attr, int raw_type) {
  if (!IsValidDataType(raw_type)) {
    return InvalidArgument(FormatNodeForError(node), ": attr '", attr.name,
                           "' holds unknown type enum ", raw_type);
  }
  DataType type = static_cast<DataType>(raw_type);
  if (attr.allowed_types.empty() || std::find(attr.allowed_types.begin(), attr.allowed_types.end(),
                                              type) != attr.allowed_types.end()) {
    return Status::OK();
  }
  std::vector<std::string_view> allowed;
  for (DataType t : attr.allowed_types) allowed.push_back(DataTypeName(t));
  return InvalidArgument(FormatNodeForError(node), ": attr '", attr.name, "' is ",
                         DataTypeName(type), ", which is not allowed; allowed: {",
                         StrJoin(allowed, ", "), "}");
}

Status CheckAttr(const proto::NodeDef& node, const AttrDef& attr) {
  auto it = node.attr().find(attr.name);
  if (it == node.attr().end()) {
    return InvalidArgument(FormatNodeForError(node), ": missing attr '", attr.name, "' (",
                           attr.kind, ")");
  }
  const proto::AttrValue& value = it->second;
  if (!AttrValueHasKind(value, attr.kind)) {
    return InvalidArgument(FormatNodeForError(node), ": attr '", attr.name, "' should be ",
                           attr.kind, ", but is ", AttrValueKind(value));
  }
  if (attr.kind == "type") return CheckAllowedType(node, attr, value.type());
  if (attr.kind == "list(type)") {
    for (int t : value.list().type()) WEFT_RETURN_IF_ERROR(CheckAllowedType(node, attr, t));
  }
  if (attr.kind == "int" && attr.minimum.has_value() && value.i() < *attr.minimum) {
    return InvalidArgument(FormatNodeForError(node), ": attr '", attr.name, "' is ", value.i(),
                           ", below its minimum ", *attr.minimum);
  }
  if (attr.kind == "string" && !attr.allowed_strings.empty() &&
      std::find(attr.allowed_strings.begin(), attr.allowed_strings.end(), value.s()) ==
          attr.allowed_strings.end()) {
    return InvalidArgument(FormatNodeForError(node), ": attr '", attr.name, "' is '", value.s(),
                           "'; allowed: ", StrJoin(attr.allowed_strings, ", "));
  }
  if (attr.kind == "shape") {
    StatusOr<PartialShape> shape = PartialShapeFromProto(value.shape());
    if (!shape.ok()) {
      return shape.status().WithContext(
          StrCat(FormatNodeForError(node), ": attr '", attr.name, "'"));
    }
  }
  return Status::OK();
}

// Appends the dtypes of one arg (several for a list arg).
Status AddArgTypes(const proto::NodeDef& node, const ArgDef& arg, std::vector<DataType>* types) {
  if (!arg.type_list_attr.empty()) {
    std::vector<DataType> list;
    WEFT_RETURN_IF_ERROR(GetNodeAttr(node, arg.type_list_attr, &list));
    types->insert(types->end(), list.begin(), list.end());
    return Status::OK();
  }
  DataType type = arg.type;
  if (!arg.type_attr.empty()) {
    Status status = GetNodeAttr(node, arg.type_attr, &type);
    if (!status.ok()) return status;
  }
  int64_t count = 1;
  if (!arg.number_attr.empty()) WEFT_RETURN_IF_ERROR(GetNodeAttr(node, arg.number_attr, &count));
  if (count < 0) return InvalidArgument(FormatNodeForError(node), ": negative list length");
  types->insert(types->end(), static_cast<size_t>(count), type);
  return Status::OK();
}

// Appends the memory types of one arg (several for a list arg).
Status AddArgMemoryTypes(const proto::NodeDef& node, const ArgDef& arg,
                         std::vector<MemoryType>* types) {
  std::vector<DataType> dtypes;
  WEFT_RETURN_IF_ERROR(AddArgTypes(node, arg, &dtypes));
  for (DataType dtype : dtypes) {
    // A resource handle names a resource in the device's ResourceMgr: the CPU reads it.
    const bool host = arg.host_memory || dtype == DataType::kResource;
    types->push_back(host ? MemoryType::kHost : MemoryType::kDevice);
  }
  return Status::OK();
}

}  // namespace

Status ValidateNodeDef(const proto::NodeDef& node, const OpDef& op) {
  if (node.op() != op.name) {
    return Internal("validating ", FormatNodeForError(node), " against op ", op.name);
  }
  for (const AttrDef& attr : op.attrs) WEFT_RETURN_IF_ERROR(CheckAttr(node, attr));
  for (const auto& [name, value] : node.attr()) {
    if (!name.starts_with("_") && op.FindAttr(name) == nullptr) {
      return InvalidArgument(FormatNodeForError(node), ": unknown attr '", name, "'");
    }
  }
  std::vector<DataType> inputs, outputs;
  WEFT_RETURN_IF_ERROR(InOutTypesForNode(node, op, &inputs, &outputs));
  int data_inputs = 0;
  bool seen_control = false;
  for (const std::string& input : node.input()) {
    StatusOr<TensorId> id = ParseTensorName(input);
    if (!id.ok()) return id.status().WithContext(FormatNodeForError(node));
    if (id->is_control()) {
      seen_control = true;
    } else {
      if (seen_control) {
        return InvalidArgument(FormatNodeForError(node), ": data input '", input,
                               "' comes after a control input");
      }
      ++data_inputs;
    }
  }
  if (data_inputs != static_cast<int>(inputs.size())) {
    return InvalidArgument(FormatNodeForError(node), " expects ", inputs.size(),
                           " data inputs, but has ", data_inputs);
  }
  return Status::OK();
}

Status InOutTypesForNode(const proto::NodeDef& node, const OpDef& op,
                         std::vector<DataType>* input_types, std::vector<DataType>* output_types) {
  input_types->clear();
  output_types->clear();
  for (const ArgDef& arg : op.inputs) WEFT_RETURN_IF_ERROR(AddArgTypes(node, arg, input_types));
  for (const ArgDef& arg : op.outputs) WEFT_RETURN_IF_ERROR(AddArgTypes(node, arg, output_types));
  return Status::OK();
}

Status MemoryTypesForNode(const proto::NodeDef& node, const OpDef& op,
                          std::vector<MemoryType>* input_types,
                          std::vector<MemoryType>* output_types) {
  input_types->clear();
  output_types->clear();
  for (const ArgDef& arg : op.inputs) {
    WEFT_RETURN_IF_ERROR(AddArgMemoryTypes(node, arg, input_types));
  }
  for (const ArgDef& arg : op.outputs) {
    WEFT_RETURN_IF_ERROR(AddArgMemoryTypes(node, arg, output_types));
  }
  return Status::OK();
}

}  // namespace weft
