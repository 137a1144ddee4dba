#include "weft/graph/builder/node_builder.h"

#include "weft/framework/node_def_util.h"

namespace weft {
namespace {

// Converts a literal to `type` element by element (literals are small).
StatusOr<Tensor> ConvertLiteral(const Tensor& value, DataType type) {
  Tensor out(type, value.shape());
  bool ok = false;
  VisitNumericType(value.dtype(), [&]<typename From>() {
    ok = VisitNumericType(type, [&]<typename To>() {
      const From* in = value.data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0; i < value.NumElements(); ++i) dst[i] = static_cast<To>(in[i]);
    });
  });
  if (!ok) {
    return InvalidArgument("cannot convert a ", DataTypeName(value.dtype()), " constant to ",
                           DataTypeName(type));
  }
  return out;
}

}  // namespace

NodeBuilder::NodeBuilder(const Scope& scope, std::string_view op_type) : scope_(scope) {
  def_.set_op(std::string(op_type));
}

NodeBuilder& NodeBuilder::Input(const weft::Input& input) {
  groups_.push_back({input});
  group_is_list_.push_back(false);
  return *this;
}

NodeBuilder& NodeBuilder::InputList(const std::vector<Output>& inputs) {
  groups_.emplace_back(inputs.begin(), inputs.end());
  group_is_list_.push_back(true);
  return *this;
}

Node* NodeBuilder::Finalize() {
  if (!scope_.ok()) return nullptr;
  Node* node = nullptr;
  Status status = Build(&node);
  if (!status.ok()) {
    scope_.UpdateStatus(status);
    return nullptr;
  }
  return node;
}

Status NodeBuilder::Build(Node** node) {
  def_.set_name(scope_.GetUniqueNameForOp(def_.op()));
  if (!scope_.device().empty()) def_.set_device(scope_.device());
  WEFT_ASSIGN_OR_RETURN(const OpDef* op, scope_.graph()->op_registry().LookUp(def_.op()));
  if (groups_.size() != op->inputs.size()) {
    return InvalidArgument(FormatNodeForError(def_), " takes ", op->inputs.size(),
                           " inputs, but was given ", groups_.size());
  }
  WEFT_RETURN_IF_ERROR(InferAttrsFromInputs(*op));
  std::vector<NodeOutput> inputs;
  WEFT_RETURN_IF_ERROR(MaterializeInputs(*op, &inputs));
  WEFT_ASSIGN_OR_RETURN(*node,
                        scope_.graph()->AddNode(def_, inputs, scope_.control_dependencies()));
  return Status::OK();
}

Status NodeBuilder::InferAttrsFromInputs(const OpDef& op) {
  auto& attrs = *def_.mutable_attr();
  for (size_t i = 0; i < groups_.size(); ++i) {
    const ArgDef& arg = op.inputs[i];
    const auto& group = groups_[i];
    if (!arg.number_attr.empty()) {
      if (!group_is_list_[i]) {
        return InvalidArgument(FormatNodeForError(def_), ": input '", arg.name,
                               "' is a list; use InputList");
      }
      if (!attrs.contains(arg.number_attr)) {
        attrs[arg.number_attr] = MakeAttrValue(static_cast<int64_t>(group.size()));
      }
    }
    for (const weft::Input& input : group) {
      if (!input.is_constant() && !input.output()) {
        return InvalidArgument(FormatNodeForError(def_), ": input '", arg.name,
                               "' comes from an op that failed to build");
      }
    }
    if (!arg.type_list_attr.empty()) {
      if (!group_is_list_[i]) {
        return InvalidArgument(FormatNodeForError(def_), ": input '", arg.name,
                               "' is a list; use InputList");
      }
      if (attrs.contains(arg.type_list_attr)) continue;
      std::vector<DataType> dtypes;
      for (const weft::Input& input : group) {
        dtypes.push_back(input.is_constant() ? input.value().dtype() : input.output().dtype());
      }
      attrs[arg.type_list_attr] = MakeAttrValue(dtypes);
      continue;
    }
    if (arg.type_attr.empty() || attrs.contains(arg.type_attr)) continue;
    for (const weft::Input& input : group) {
      if (!input.is_literal()) {
        attrs[arg.type_attr] =
            MakeAttrValue(input.is_constant() ? input.value().dtype() : input.output().dtype());
        break;
      }
    }
  }
  for (size_t i = 0; i < groups_.size(); ++i) {  // attrs still open: take the literal's dtype
    const ArgDef& arg = op.inputs[i];
    if (!arg.type_attr.empty() && !attrs.contains(arg.type_attr) && !groups_[i].empty()) {
      attrs[arg.type_attr] = MakeAttrValue(groups_[i][0].value().dtype());
    }
  }
  return Status::OK();
}

Status NodeBuilder::MaterializeInputs(const OpDef& op, std::vector<NodeOutput>* inputs) {
  Scope const_scope = scope_.WithOpName("").WithNoControlDependencies();
  for (size_t i = 0; i < groups_.size(); ++i) {
    const ArgDef& arg = op.inputs[i];
    DataType wanted = arg.type;
    if (!arg.type_attr.empty()) WEFT_RETURN_IF_ERROR(GetNodeAttr(def_, arg.type_attr, &wanted));
    std::vector<DataType> list_types;
    if (!arg.type_list_attr.empty()) {
      WEFT_RETURN_IF_ERROR(GetNodeAttr(def_, arg.type_list_attr, &list_types));
    }
    for (size_t j = 0; j < groups_[i].size(); ++j) {
      const weft::Input& input = groups_[i][j];
      if (j < list_types.size()) wanted = list_types[j];
      if (!input.is_constant()) {
        inputs->push_back({input.output().node(), input.output().index()});
        continue;
      }
      Tensor value = input.value();
      if (input.is_literal() && value.dtype() != wanted) {
        StatusOr<Tensor> converted = ConvertLiteral(value, wanted);
        if (!converted.ok()) return converted.status().WithContext(FormatNodeForError(def_));
        value = std::move(converted).value();
      }
      Node* constant = NodeBuilder(const_scope, "Const")
                           .Attr("value", value)
                           .Attr("dtype", value.dtype())
                           .Finalize();
      if (constant == nullptr) return scope_.status();
      inputs->push_back({constant, 0});
    }
  }
  return Status::OK();
}

}  // namespace weft
