#include "weft/framework/kernel_registry.h"

#include <algorithm>

#include "weft/framework/device_base.h"
#include "weft/framework/node_def_util.h"

namespace weft {

std::string KernelDef::DebugString() const {
  std::string out = StrCat(op_, " on ", device_type_);
  for (const auto& [attr, allowed] : constraints_) {
    std::vector<std::string_view> names;
    for (DataType t : allowed) names.push_back(DataTypeName(t));
    out += StrCat(" with ", attr, " in {", StrJoin(names, ", "), "}");
  }
  return out;
}

void KernelRegistry::Register(KernelDef def, KernelFactory factory) {
  std::string op = def.op();
  entries_.emplace(std::move(op), Entry{std::move(def), std::move(factory)});
}

void KernelRegistry::CopyDeviceKernels(std::string_view from_device_type,
                                       const std::string& to_device_type) {
  std::vector<Entry> copies;
  for (const auto& [op, entry] : entries_) {
    if (entry.def.device_type() != from_device_type) continue;
    KernelDef def(entry.def.op(), to_device_type);
    for (const auto& [attr, allowed] : entry.def.constraints()) def.TypeConstraint(attr, allowed);
    copies.push_back(Entry{std::move(def), entry.factory});
  }
  for (Entry& copy : copies) Register(std::move(copy.def), std::move(copy.factory));
}

const KernelRegistry::Entry* KernelRegistry::FindEntry(const proto::NodeDef& node,
                                                       std::string_view device_type) const {
  auto [begin, end] = entries_.equal_range(node.op());
  for (auto it = begin; it != end; ++it) {
    const KernelDef& def = it->second.def;
    if (def.device_type() != device_type) continue;
    bool matches = true;
    for (const auto& [attr, allowed] : def.constraints()) {
      DataType type;
      if (!GetNodeAttr(node, attr, &type).ok() ||
          std::find(allowed.begin(), allowed.end(), type) == allowed.end()) {
        matches = false;
        break;
      }
    }
    if (matches) return &it->second;
  }
  return nullptr;
}

bool KernelRegistry::HasKernel(const proto::NodeDef& node, std::string_view device_type) const {
  return FindEntry(node, device_type) != nullptr;
}

StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::CreateKernel(const proto::NodeDef& node,
                                                                 const OpDef& op,
                                                                 DeviceBase* device) const {
  const Entry* entry = FindEntry(node, device->device_type());
  if (entry == nullptr) {
    std::vector<std::string> registered;
    auto [begin, end] = entries_.equal_range(node.op());
    for (auto it = begin; it != end; ++it) registered.push_back(it->second.def.DebugString());
    std::vector<std::string> type_attrs;
    for (const AttrDef& attr : op.attrs) {
      auto it = node.attr().find(attr.name);
      if (attr.kind == "type" && it != node.attr().end()) {
        type_attrs.push_back(StrCat(attr.name, "=", SummarizeAttrValue(it->second)));
      }
    }
    return NotFound(
        "no kernel for ", FormatNodeForError(node), " on device type ", device->device_type(),
        " with ", StrJoin(type_attrs, ", "),
        "; registered kernels: ", registered.empty() ? "none" : StrJoin(registered, "; "));
  }
  std::vector<DataType> input_types, output_types;
  WEFT_RETURN_IF_ERROR(InOutTypesForNode(node, op, &input_types, &output_types));
  OpKernelConstruction construction(node, op, device, std::move(input_types),
                                    std::move(output_types));
  StatusOr<std::unique_ptr<OpKernel>> kernel = entry->factory(&construction);
  if (!kernel.ok()) {
    return kernel.status().WithContext(StrCat("creating kernel for ", FormatNodeForError(node)));
  }
  return kernel;
}

std::vector<const KernelDef*> KernelRegistry::KernelDefs() const {
  std::vector<const KernelDef*> defs;
  for (const auto& [op, entry] : entries_) defs.push_back(&entry.def);
  return defs;
}

}  // namespace weft
