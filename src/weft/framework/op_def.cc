#include "weft/framework/op_def.h"

#include <cctype>
#include <set>

#include "weft/framework/attr_value_util.h"

namespace weft {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Splits "a, b, c" on commas, trimming each item; an empty input gives no items.
std::vector<std::string_view> SplitList(std::string_view s) {
  std::vector<std::string_view> items;
  s = Trim(s);
  if (s.empty()) return items;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    items.push_back(Trim(s.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

// Splits "name: rest" into name and rest.
Status SplitNameAndRest(std::string_view spec, std::string_view* name, std::string_view* rest) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    return InvalidArgument("spec '", spec, "' has no ':' between name and type");
  }
  *name = Trim(spec.substr(0, colon));
  *rest = Trim(spec.substr(colon + 1));
  if (!IsIdentifier(*name)) return InvalidArgument("spec '", spec, "' has a bad name");
  return Status::OK();
}

StatusOr<std::vector<DataType>> ParseTypeSet(std::string_view braced) {
  std::vector<DataType> types;
  for (std::string_view item : SplitList(braced.substr(1, braced.size() - 2))) {
    DataType type = DataTypeFromName(item);
    if (type == DataType::kInvalid) return InvalidArgument("unknown type '", item, "'");
    types.push_back(type);
  }
  return types;
}

StatusOr<std::vector<std::string>> ParseStringSet(std::string_view braced) {
  std::vector<std::string> strings;
  for (std::string_view item : SplitList(braced.substr(1, braced.size() - 2))) {
    if (item.size() < 2 || item.front() != '\'' || item.back() != '\'') {
      return InvalidArgument("string choice ", item, " is not in single quotes");
    }
    strings.emplace_back(item.substr(1, item.size() - 2));
  }
  return strings;
}

StatusOr<proto::AttrValue> ParseDefault(const AttrDef& attr, std::string_view text) {
  proto::AttrValue value;
  const std::string& kind = attr.kind;
  if (kind == "int") {
    try {
      value.set_i(std::stoll(std::string(text)));
    } catch (...) {
      return InvalidArgument("default '", text, "' is not an int");
    }
  } else if (kind == "float") {
    try {
      value.set_f(std::stof(std::string(text)));
    } catch (...) {
      return InvalidArgument("default '", text, "' is not a float");
    }
  } else if (kind == "bool") {
    if (text != "true" && text != "false") return InvalidArgument("default '", text, "' not bool");
    value.set_b(text == "true");
  } else if (kind == "string") {
    if (text.size() < 2 || text.front() != '\'' || text.back() != '\'') {
      return InvalidArgument("string default ", text, " is not in single quotes");
    }
    value.set_s(std::string(text.substr(1, text.size() - 2)));
  } else if (kind == "type") {
    DataType type = DataTypeFromName(text);
    if (type == DataType::kInvalid) return InvalidArgument("unknown type default '", text, "'");
    value.set_type(static_cast<proto::DataType>(type));
  } else if (kind == "list(int)") {
    if (text.size() < 2 || text.front() != '[' || text.back() != ']') {
      return InvalidArgument("list default '", text, "' is not in brackets");
    }
    auto* list = value.mutable_list();
    for (std::string_view item : SplitList(text.substr(1, text.size() - 2))) {
      try {
        list->add_i(std::stoll(std::string(item)));
      } catch (...) {
        return InvalidArgument("list default item '", item, "' is not an int");
      }
    }
  } else if (kind == "list(string)") {
    // "[]" or "['a', 'b']" (items without commas).
    if (text.size() < 2 || text.front() != '[' || text.back() != ']') {
      return InvalidArgument("list default '", text, "' is not in brackets");
    }
    auto* list = value.mutable_list();
    for (std::string_view item : SplitList(text.substr(1, text.size() - 2))) {
      if (item.size() < 2 || item.front() != '\'' || item.back() != '\'') {
        return InvalidArgument("list default item ", item, " is not in single quotes");
      }
      list->add_s(std::string(item.substr(1, item.size() - 2)));
    }
  } else if (kind == "shape") {
    // "unknown" (unknown rank) or "[2, -1]" (-1 marks an unknown dimension).
    auto* shape = value.mutable_shape();
    if (text == "unknown") {
      shape->set_unknown_rank(true);
    } else if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
      for (std::string_view item : SplitList(text.substr(1, text.size() - 2))) {
        try {
          shape->add_dim()->set_size(std::stoll(std::string(item)));
        } catch (...) {
          return InvalidArgument("shape default item '", item, "' is not an int");
        }
      }
    } else {
      return InvalidArgument("shape default '", text, "' is neither 'unknown' nor [dims]");
    }
  } else {
    return InvalidArgument("defaults are not supported for attrs of kind ", kind);
  }
  return value;
}

}  // namespace

const AttrDef* OpDef::FindAttr(std::string_view attr_name) const {
  for (const AttrDef& attr : attrs) {
    if (attr.name == attr_name) return &attr;
  }
  return nullptr;
}

StatusOr<AttrDef> ParseAttrSpec(std::string_view spec) {
  AttrDef attr;
  std::string_view name, rest;
  WEFT_RETURN_IF_ERROR(SplitNameAndRest(spec, &name, &rest));
  attr.name = std::string(name);
  std::string_view default_text;
  size_t eq = rest.find('=');
  while (eq != std::string_view::npos && eq > 0 && rest[eq - 1] == '>') eq = rest.find('=', eq + 1);
  if (eq != std::string_view::npos) {
    default_text = Trim(rest.substr(eq + 1));
    rest = Trim(rest.substr(0, eq));
  }
  if (!rest.empty() && rest.front() == '{') {
    if (rest.back() != '}') return InvalidArgument("attr spec '", spec, "': unclosed '{'");
    if (rest.find('\'') != std::string_view::npos) {
      attr.kind = "string";
      WEFT_ASSIGN_OR_RETURN(attr.allowed_strings, ParseStringSet(rest));
    } else {
      attr.kind = "type";
      WEFT_ASSIGN_OR_RETURN(attr.allowed_types, ParseTypeSet(rest));
    }
  } else if (rest.starts_with("list(") && rest.ends_with(")") && rest[5] == '{') {
    attr.kind = "list(type)";
    WEFT_ASSIGN_OR_RETURN(attr.allowed_types, ParseTypeSet(rest.substr(5, rest.size() - 6)));
  } else if (size_t ge = rest.find(">="); ge != std::string_view::npos) {
    attr.kind = std::string(Trim(rest.substr(0, ge)));
    if (attr.kind != "int") return InvalidArgument("attr spec '", spec, "': '>=' needs an int");
    try {
      attr.minimum = std::stoll(std::string(Trim(rest.substr(ge + 2))));
    } catch (...) {
      return InvalidArgument("attr spec '", spec, "': bad minimum");
    }
  } else {
    static const std::set<std::string_view> kKinds = {
        "int",    "float",     "bool",        "string",     "type",        "shape",
        "tensor", "list(int)", "list(float)", "list(type)", "list(shape)", "list(string)"};
    if (!kKinds.contains(rest)) return InvalidArgument("attr spec '", spec, "': unknown kind");
    attr.kind = std::string(rest);
  }
  if (!default_text.empty()) {
    StatusOr<proto::AttrValue> value = ParseDefault(attr, default_text);
    if (!value.ok()) return value.status().WithContext(StrCat("attr spec '", spec, "'"));
    attr.default_value = std::move(value).value();
  }
  return attr;
}

OpDefBuilder::OpDefBuilder(std::string op_name) { op_.name = std::move(op_name); }

OpDefBuilder& OpDefBuilder::Input(std::string_view spec) {
  input_specs_.emplace_back(spec);
  return *this;
}
OpDefBuilder& OpDefBuilder::Output(std::string_view spec) {
  output_specs_.emplace_back(spec);
  return *this;
}
OpDefBuilder& OpDefBuilder::Attr(std::string_view spec) {
  attr_specs_.emplace_back(spec);
  return *this;
}
OpDefBuilder& OpDefBuilder::HostMemory(std::string_view arg_name) {
  host_memory_args_.emplace_back(arg_name);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) {
  op_.shape_fn = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetIsStateful() {
  op_.is_stateful = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::SetIsInternal() {
  op_.is_internal = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::Doc(std::string_view doc) {
  op_.doc = std::string(doc);
  return *this;
}

StatusOr<ArgDef> OpDefBuilder::ParseArg(std::string_view spec) const {
  ArgDef arg;
  std::string_view name, rest;
  WEFT_RETURN_IF_ERROR(SplitNameAndRest(spec, &name, &rest));
  arg.name = std::string(name);
  if (size_t star = rest.find('*'); star != std::string_view::npos) {
    arg.number_attr = std::string(Trim(rest.substr(0, star)));
    rest = Trim(rest.substr(star + 1));
    const AttrDef* number = op_.FindAttr(arg.number_attr);
    if (number == nullptr || number->kind != "int") {
      return InvalidArgument("arg '", spec, "': '", arg.number_attr, "' is not an int attr");
    }
  }
  DataType fixed = DataTypeFromName(rest);
  if (fixed != DataType::kInvalid) {
    arg.type = fixed;
    return arg;
  }
  const AttrDef* type_attr = op_.FindAttr(rest);
  if (type_attr != nullptr && type_attr->kind == "list(type)" && arg.number_attr.empty()) {
    arg.type_list_attr = std::string(rest);
    return arg;
  }
  if (type_attr == nullptr || type_attr->kind != "type") {
    return InvalidArgument("arg '", spec, "': '", rest,
                           "' is neither a type, a type attr nor a list(type) attr");
  }
  arg.type_attr = std::string(rest);
  return arg;
}

StatusOr<OpDef> OpDefBuilder::Build() const {
  OpDef op = op_;
  auto context = [&](std::string_view spec) { return StrCat("op ", op.name, ": ", spec); };
  // Attrs first: arg specs refer to them.
  OpDefBuilder with_attrs(op.name);
  for (const std::string& spec : attr_specs_) {
    StatusOr<AttrDef> attr = ParseAttrSpec(spec);
    if (!attr.ok()) return attr.status().WithContext(context("bad attr"));
    if (op.FindAttr(attr->name) != nullptr) {
      return InvalidArgument(context("duplicate attr "), attr->name);
    }
    op.attrs.push_back(std::move(attr).value());
  }
  with_attrs.op_ = op;
  for (const std::string& spec : input_specs_) {
    StatusOr<ArgDef> arg = with_attrs.ParseArg(spec);
    if (!arg.ok()) return arg.status().WithContext(context("bad input"));
    op.inputs.push_back(std::move(arg).value());
  }
  for (const std::string& spec : output_specs_) {
    StatusOr<ArgDef> arg = with_attrs.ParseArg(spec);
    if (!arg.ok()) return arg.status().WithContext(context("bad output"));
    op.outputs.push_back(std::move(arg).value());
  }
  for (const std::string& name : host_memory_args_) {
    bool found = false;
    for (std::vector<ArgDef>* args : {&op.inputs, &op.outputs}) {
      for (ArgDef& arg : *args) {
        if (arg.name != name) continue;
        arg.host_memory = true;
        found = true;
      }
    }
    if (!found) {
      return InvalidArgument(context("HostMemory names '"), name, "', which is not an input or ",
                             "output");
    }
  }
  return op;
}

}  // namespace weft
