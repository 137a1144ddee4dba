#include "weft/framework/attr_value_util.h"

#include "weft/framework/tensor_proto_util.h"

namespace weft {

proto::AttrValue MakeAttrValue(int64_t value) {
  proto::AttrValue out;
  out.set_i(value);
  return out;
}
proto::AttrValue MakeAttrValue(int value) { return MakeAttrValue(static_cast<int64_t>(value)); }
proto::AttrValue MakeAttrValue(float value) {
  proto::AttrValue out;
  out.set_f(value);
  return out;
}
proto::AttrValue MakeAttrValue(bool value) {
  proto::AttrValue out;
  out.set_b(value);
  return out;
}
proto::AttrValue MakeAttrValue(std::string_view value) {
  proto::AttrValue out;
  out.set_s(std::string(value));
  return out;
}
proto::AttrValue MakeAttrValue(const char* value) { return MakeAttrValue(std::string_view(value)); }
proto::AttrValue MakeAttrValue(DataType value) {
  proto::AttrValue out;
  out.set_type(ToProto(value));
  return out;
}
proto::AttrValue MakeAttrValue(const TensorShape& value) {
  proto::AttrValue out;
  *out.mutable_shape() = ToProto(value);
  return out;
}
proto::AttrValue MakeAttrValue(const PartialShape& value) {
  proto::AttrValue out;
  *out.mutable_shape() = ToProto(value);
  return out;
}
proto::AttrValue MakeAttrValue(const Tensor& value) {
  proto::AttrValue out;
  *out.mutable_tensor() = ToProto(value);
  return out;
}
proto::AttrValue MakeAttrValue(const std::vector<int64_t>& value) {
  proto::AttrValue out;
  auto* list = out.mutable_list();
  for (int64_t v : value) list->add_i(v);
  return out;
}
proto::AttrValue MakeAttrValue(const std::vector<int>& value) {
  return MakeAttrValue(std::vector<int64_t>(value.begin(), value.end()));
}
proto::AttrValue MakeAttrValue(const std::vector<float>& value) {
  proto::AttrValue out;
  auto* list = out.mutable_list();
  for (float v : value) list->add_f(v);
  return out;
}
proto::AttrValue MakeAttrValue(const std::vector<DataType>& value) {
  proto::AttrValue out;
  auto* list = out.mutable_list();
  for (DataType v : value) list->add_type(ToProto(v));
  return out;
}

proto::AttrValue MakeAttrValue(const std::vector<std::string>& value) {
  proto::AttrValue out;
  auto* list = out.mutable_list();
  for (const std::string& v : value) list->add_s(v);
  return out;
}
proto::AttrValue MakeAttrValue(const std::vector<TensorShape>& value) {
  proto::AttrValue out;
  auto* list = out.mutable_list();
  for (const TensorShape& v : value) *list->add_shape() = ToProto(v);
  return out;
}

std::string AttrValueKind(const proto::AttrValue& value) {
  switch (value.value_case()) {
    case proto::AttrValue::kS:
      return "string";
    case proto::AttrValue::kI:
      return "int";
    case proto::AttrValue::kF:
      return "float";
    case proto::AttrValue::kB:
      return "bool";
    case proto::AttrValue::kType:
      return "type";
    case proto::AttrValue::kShape:
      return "shape";
    case proto::AttrValue::kTensor:
      return "tensor";
    case proto::AttrValue::kList: {
      const auto& list = value.list();
      if (list.s_size() > 0) return "list(string)";
      if (list.i_size() > 0) return "list(int)";
      if (list.f_size() > 0) return "list(float)";
      if (list.b_size() > 0) return "list(bool)";
      if (list.type_size() > 0) return "list(type)";
      if (list.shape_size() > 0) return "list(shape)";
      if (list.tensor_size() > 0) return "list(tensor)";
      return "list(?)";
    }
    case proto::AttrValue::VALUE_NOT_SET:
      return "<empty>";
  }
  return "<empty>";
}

bool AttrValueHasKind(const proto::AttrValue& value, std::string_view kind) {
  std::string actual = AttrValueKind(value);
  if (actual == kind) return true;
  return actual == "list(?)" && kind.starts_with("list(");
}

std::string SummarizeAttrValue(const proto::AttrValue& value) {
  switch (value.value_case()) {
    case proto::AttrValue::kS:
      return StrCat("'", value.s(), "'");
    case proto::AttrValue::kI:
      return std::to_string(value.i());
    case proto::AttrValue::kF:
      return StrCat(value.f());
    case proto::AttrValue::kB:
      return value.b() ? "true" : "false";
    case proto::AttrValue::kType:
      return std::string(DataTypeName(static_cast<DataType>(value.type())));
    case proto::AttrValue::kShape: {
      StatusOr<PartialShape> shape = PartialShapeFromProto(value.shape());
      return shape.ok() ? shape->DebugString() : "<bad shape>";
    }
    case proto::AttrValue::kTensor:
      return StrCat("Tensor<", DataTypeName(static_cast<DataType>(value.tensor().dtype())), ">");
    case proto::AttrValue::kList: {
      const auto& list = value.list();
      std::vector<std::string> items;
      for (int64_t i : list.i()) items.push_back(std::to_string(i));
      for (float f : list.f()) items.push_back(StrCat(f));
      for (int t : list.type()) items.emplace_back(DataTypeName(static_cast<DataType>(t)));
      for (const auto& s : list.s()) items.push_back(StrCat("'", s, "'"));
      return StrCat("[", StrJoin(items, ","), "]");
    }
    case proto::AttrValue::VALUE_NOT_SET:
      return "<empty>";
  }
  return "<empty>";
}

StatusOr<const proto::AttrValue*> FindNodeAttr(const proto::NodeDef& node, std::string_view name) {
  auto it = node.attr().find(std::string(name));
  if (it == node.attr().end()) {
    return InvalidArgument("node '", node.name(), "' (", node.op(), ") has no attr '", name, "'");
  }
  return &it->second;
}

namespace {

Status KindMismatch(const proto::NodeDef& node, std::string_view name, std::string_view wanted,
                    const proto::AttrValue& value) {
  return InvalidArgument("attr '", name, "' of node '", node.name(), "' (", node.op(),
                         ") should be ", wanted, ", but is ", AttrValueKind(value));
}

// Looks up `name` and checks that it holds `kind`.
StatusOr<const proto::AttrValue*> FindAttrOfKind(const proto::NodeDef& node, std::string_view name,
                                                 std::string_view kind) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* value, FindNodeAttr(node, name));
  if (!AttrValueHasKind(*value, kind)) return KindMismatch(node, name, kind, *value);
  return value;
}

}  // namespace

Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, int64_t* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "int"));
  *value = attr->i();
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, int* value) {
  int64_t wide = 0;
  WEFT_RETURN_IF_ERROR(GetNodeAttr(node, name, &wide));
  if (wide < INT32_MIN || wide > INT32_MAX) {
    return InvalidArgument("attr '", name, "' of node '", node.name(), "' is out of int32 range");
  }
  *value = static_cast<int>(wide);
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, float* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "float"));
  *value = attr->f();
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, bool* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "bool"));
  *value = attr->b();
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, std::string* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "string"));
  *value = attr->s();
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, DataType* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "type"));
  StatusOr<DataType> type = FromProto(attr->type());
  if (!type.ok()) return type.status().WithContext(StrCat("attr '", name, "' of ", node.name()));
  *value = *type;
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, TensorShape* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "shape"));
  StatusOr<TensorShape> shape = TensorShapeFromProto(attr->shape());
  if (!shape.ok()) return shape.status().WithContext(StrCat("attr '", name, "' of ", node.name()));
  *value = *shape;
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, PartialShape* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "shape"));
  StatusOr<PartialShape> shape = PartialShapeFromProto(attr->shape());
  if (!shape.ok()) return shape.status().WithContext(StrCat("attr '", name, "' of ", node.name()));
  *value = *shape;
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, Tensor* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "tensor"));
  StatusOr<Tensor> tensor = TensorFromProto(attr->tensor());
  if (!tensor.ok()) {
    return tensor.status().WithContext(StrCat("attr '", name, "' of node '", node.name(), "'"));
  }
  *value = *tensor;
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, std::vector<int64_t>* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "list(int)"));
  value->assign(attr->list().i().begin(), attr->list().i().end());
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, std::vector<int>* value) {
  std::vector<int64_t> wide;
  WEFT_RETURN_IF_ERROR(GetNodeAttr(node, name, &wide));
  value->assign(wide.begin(), wide.end());
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name, std::vector<float>* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "list(float)"));
  value->assign(attr->list().f().begin(), attr->list().f().end());
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name,
                   std::vector<DataType>* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "list(type)"));
  value->clear();
  for (int t : attr->list().type()) {
    StatusOr<DataType> type = FromProto(static_cast<proto::DataType>(t));
    if (!type.ok()) return type.status().WithContext(StrCat("attr '", name, "' of ", node.name()));
    value->push_back(*type);
  }
  return Status::OK();
}

Status GetNodeAttr(const proto::NodeDef& node, std::string_view name,
                   std::vector<std::string>* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "list(string)"));
  value->assign(attr->list().s().begin(), attr->list().s().end());
  return Status::OK();
}
Status GetNodeAttr(const proto::NodeDef& node, std::string_view name,
                   std::vector<TensorShape>* value) {
  WEFT_ASSIGN_OR_RETURN(const proto::AttrValue* attr, FindAttrOfKind(node, name, "list(shape)"));
  value->clear();
  for (const proto::TensorShapeProto& proto : attr->list().shape()) {
    StatusOr<TensorShape> shape = TensorShapeFromProto(proto);
    if (!shape.ok()) {
      return shape.status().WithContext(StrCat("attr '", name, "' of ", node.name()));
    }
    value->push_back(*shape);
  }
  return Status::OK();
}

}  // namespace weft
