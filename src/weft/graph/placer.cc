#include "weft/graph/placer.h"

#include <algorithm>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "weft/core/logging.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/node_def_util.h"

namespace weft {
namespace {

constexpr std::string_view kColocationAttr = "_class";
constexpr std::string_view kColocationPrefix = "loc:@";
// Longest member list quoted in an error message.
constexpr size_t kMaxMembersInMessage = 8;

// Union-find over node ids: parent[i] == i for a root.
int FindRoot(std::vector<int>& parent, int i) {
  int root = i;
  while (parent[root] != root) root = parent[root];
  while (parent[i] != root) {
    int next = parent[i];
    parent[i] = root;
    i = next;
  }
  return root;
}

// Joins the two sets; the smaller id becomes the root, which keeps the result independent of the
// order in which edges are visited.
void Unite(std::vector<int>& parent, int a, int b) {
  a = FindRoot(parent, a);
  b = FindRoot(parent, b);
  if (a == b) return;
  if (a < b) {
    parent[b] = a;
  } else {
    parent[a] = b;
  }
}

}  // namespace

struct Placer::Group {
  std::vector<Node*> members;                                  // in id order
  ParsedDeviceName spec;                                       // the merged requests of the members
  std::vector<std::pair<Node*, ParsedDeviceName>> requesters;  // members with a request
  Node* assigned_member = nullptr;                             // a member that already had a device
  int assigned_device = -1;
};

Placer::Placer(Graph* graph, std::vector<DeviceDescription> devices, int default_device,
               const KernelRegistry* kernels, PlacerOptions options)
    : graph_(graph),
      devices_(std::move(devices)),
      default_device_(default_device),
      kernels_(kernels),
      options_(options) {}

Status Placer::Run() {
  if (devices_.empty()) return FailedPrecondition("No devices are registered");
  if (default_device_ < 0 || default_device_ >= static_cast<int>(devices_.size())) {
    return InvalidArgument("Placer: default device index ", default_device_,
                           " is out of range for ", devices_.size(), " devices");
  }
  WEFT_RETURN_IF_ERROR(ParseDevices());
  std::vector<Group> groups;
  WEFT_RETURN_IF_ERROR(BuildGroups(&groups));

  std::vector<int> chosen;
  chosen.reserve(groups.size());
  for (Group& group : groups) {
    WEFT_RETURN_IF_ERROR(MergeRequests(&group));
    WEFT_RETURN_IF_ERROR(ApplyAssignedDevice(&group));
    int device = group.assigned_device;
    if (device < 0) {
      WEFT_ASSIGN_OR_RETURN(device, ChooseDevice(group));
    }
    chosen.push_back(device);
  }

  // Every group has a device: only now is the graph changed.
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string& device = devices_[chosen[i]].name;
    for (Node* node : groups[i].members) {
      node->set_assigned_device_name(device);
      if (options_.log_device_placement) {
        WEFT_LOG(INFO) << node->name() << ": (" << node->type_string() << "): " << device;
      }
    }
  }
  return Status::OK();
}

Status Placer::ParseDevices() {
  parsed_devices_.clear();
  for (DeviceDescription& device : devices_) {
    auto parsed = ParseDeviceName(device.name);
    if (!parsed.ok()) return parsed.status().WithContext("Placer: bad device");
    if (!IsFullySpecified(*parsed)) {
      return InvalidArgument("Placer: device '", device.name,
                             "' is not a full name (/job:j/replica:r/task:t/device:TYPE:id)");
    }
    if (device.type.empty()) device.type = parsed->type;
    parsed_devices_.push_back(*std::move(parsed));
  }
  return Status::OK();
}

Status Placer::BuildGroups(std::vector<Group>* groups) const {
  std::vector<int> parent(graph_->num_node_ids());
  std::iota(parent.begin(), parent.end(), 0);
  const std::vector<Node*> nodes = graph_->nodes();
  // A resource handle is only meaningful on the device that made it.
  for (Node* node : nodes) {
    for (const Edge* edge : node->in_edges()) {
      if (edge->IsControlEdge()) continue;
      if (node->input_type(edge->dst_input) == DataType::kResource) {
        Unite(parent, node->id(), edge->src->id());
      }
    }
  }
  WEFT_RETURN_IF_ERROR(ColocateByAttr(&parent));

  std::vector<int> group_of(parent.size(), -1);
  for (Node* node : nodes) {
    int root = FindRoot(parent, node->id());
    if (group_of[root] < 0) {
      group_of[root] = static_cast<int>(groups->size());
      groups->emplace_back();
    }
    (*groups)[group_of[root]].members.push_back(node);
  }
  return Status::OK();
}

Status Placer::ColocateByAttr(std::vector<int>* parent) const {
  // The first node naming each colocation target, so that nodes naming a target that is not in
  // the graph still end up together.
  std::unordered_map<std::string, int> first_naming;
  for (Node* node : graph_->nodes()) {
    auto it = node->def().attr().find(std::string(kColocationAttr));
    if (it == node->def().attr().end()) continue;
    std::string kind = AttrValueKind(it->second);
    if (kind != "list(string)" && kind != "list(?)") {
      return InvalidArgument(FormatNodeForError(node->def()), ": colocation attr ", kColocationAttr,
                             " must be a list of strings like 'loc:@node', not ", kind);
    }
    for (const std::string& entry : it->second.list().s()) {
      if (!entry.starts_with(kColocationPrefix)) continue;
      std::string target = entry.substr(kColocationPrefix.size());
      if (target.empty()) continue;
      if (Node* other = graph_->FindNode(target)) Unite(*parent, node->id(), other->id());
      auto [first, inserted] = first_naming.emplace(std::move(target), node->id());
      if (!inserted) Unite(*parent, node->id(), first->second);
    }
  }
  return Status::OK();
}

Status Placer::MergeRequests(Group* group) const {
  for (Node* member : group->members) {
    const std::string& request = member->requested_device();
    if (request.empty()) continue;
    auto parsed = ParseDeviceName(request);
    if (!parsed.ok()) {
      return InvalidArgument("Cannot assign a device for ", FormatNodeForError(member->def()), ": ",
                             parsed.status().message());
    }
    Status merged = MergeDevNames(&group->spec, *parsed, options_.allow_soft_placement);
    if (!merged.ok()) {
      // Some earlier requester set the part that conflicts.
      Node* other = group->requesters.front().first;
      for (const auto& [node, spec] : group->requesters) {
        if (!AreCompatible(spec, *parsed)) {
          other = node;
          break;
        }
      }
      return InvalidArgument(
          "Cannot colocate ", FormatNodeForError(other->def()), " and ",
          FormatNodeForError(member->def()),
          ", which must share a device (resource inputs and _class attrs keep nodes together): '",
          other->name(), "' requests '", other->requested_device(), "' but '", member->name(),
          "' requests '", request, "' (", merged.message(), ")");
    }
    group->requesters.emplace_back(member, *std::move(parsed));
  }
  return Status::OK();
}

Status Placer::ApplyAssignedDevice(Group* group) const {
  for (Node* member : group->members) {
    const std::string& assigned = member->assigned_device_name();
    if (assigned.empty()) continue;
    int index = -1;
    auto parsed = ParseDeviceName(assigned);
    for (size_t d = 0; d < devices_.size() && index < 0; ++d) {
      if (devices_[d].name == assigned || (parsed.ok() && *parsed == parsed_devices_[d])) {
        index = static_cast<int>(d);
      }
    }
    if (index < 0) {
      return InvalidArgument(
          FormatNodeForError(member->def()), " is already assigned to '", assigned,
          "', which is not an available device. Available devices: ", AvailableDevices());
    }
    if (group->assigned_device >= 0 && group->assigned_device != index) {
      return InvalidArgument("Cannot colocate ", FormatNodeForError(group->assigned_member->def()),
                             " and ", FormatNodeForError(member->def()),
                             ": they are already assigned to different devices '",
                             devices_[group->assigned_device].name, "' and '", assigned, "'");
    }
    group->assigned_device = index;
    group->assigned_member = member;
  }
  if (group->assigned_device >= 0 && !options_.allow_soft_placement &&
      !IsSpecification(group->spec, parsed_devices_[group->assigned_device])) {
    return InvalidArgument("Cannot assign a device for ",
                           FormatNodeForError(group->assigned_member->def()),
                           ": it is already assigned to '", devices_[group->assigned_device].name,
                           "', which does not match the requested device '",
                           ParsedNameToString(group->spec), "'", GroupNote(*group));
  }
  return Status::OK();
}

StatusOr<int> Placer::ChooseDevice(const Group& group) const {
  const int num_devices = static_cast<int>(devices_.size());
  if (group.spec == ParsedDeviceName()) {
    if (SupportsAll(group, default_device_)) return default_device_;
    for (int d = 0; d < num_devices; ++d) {
      if (SupportsAll(group, d)) return d;
    }
    std::vector<int> all(devices_.size());
    std::iota(all.begin(), all.end(), 0);
    return NoKernelError(group, all);
  }
  std::vector<int> matching;
  for (int d = 0; d < num_devices; ++d) {
    if (IsSpecification(group.spec, parsed_devices_[d])) matching.push_back(d);
  }
  for (int d : matching) {
    if (SupportsAll(group, d)) return d;
  }
  if (options_.allow_soft_placement) return SoftPlace(group);
  if (matching.empty()) return NoMatchError(group);
  return NoKernelError(group, matching);
}

StatusOr<int> Placer::SoftPlace(const Group& group) const {
  // Keep where the request points (job, replica, task) but let the device type and id go.
  ParsedDeviceName relaxed = group.spec;
  relaxed.has_type = false;
  relaxed.has_id = false;
  std::vector<int> matching;
  for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
    if (IsSpecification(relaxed, parsed_devices_[d])) matching.push_back(d);
  }
  if (IsSpecification(relaxed, parsed_devices_[default_device_]) &&
      SupportsAll(group, default_device_)) {
    return default_device_;
  }
  for (int d : matching) {
    if (SupportsAll(group, d)) return d;
  }
  if (matching.empty()) return NoMatchError(group);
  return NoKernelError(group, matching);
}

bool Placer::HasKernel(const Node& node, int device) const {
  return kernels_ == nullptr || kernels_->HasKernel(node.def(), devices_[device].type);
}

bool Placer::SupportsAll(const Group& group, int device) const {
  for (const Node* member : group.members) {
    if (!HasKernel(*member, device)) return false;
  }
  return true;
}

std::string Placer::AvailableDevices() const {
  std::vector<std::string_view> names;
  names.reserve(devices_.size());
  for (const DeviceDescription& device : devices_) names.push_back(device.name);
  return StrJoin(names, ", ");
}

std::string Placer::GroupNote(const Group& group) const {
  if (group.members.size() < 2) return "";
  std::vector<std::string> described;
  for (const Node* member : group.members) {
    if (described.size() == kMaxMembersInMessage) {
      described.push_back(StrCat("and ", group.members.size() - kMaxMembersInMessage, " more"));
      break;
    }
    described.push_back(
        member->requested_device().empty()
            ? StrCat("'", member->name(), "'")
            : StrCat("'", member->name(), "' (requests '", member->requested_device(), "')"));
  }
  return StrCat(" (merged over its colocation group [", StrJoin(described, ", "), "] to '",
                ParsedNameToString(group.spec), "')");
}

Status Placer::NoMatchError(const Group& group) const {
  // Blame a member whose own request matches nothing; else the merge is at fault.
  Node* culprit = group.requesters.front().first;
  for (const auto& [node, spec] : group.requesters) {
    bool matches_some = false;
    for (const ParsedDeviceName& device : parsed_devices_) {
      matches_some = matches_some || IsSpecification(spec, device);
    }
    if (!matches_some) {
      culprit = node;
      break;
    }
  }
  return InvalidArgument("Cannot assign a device for ", FormatNodeForError(culprit->def()),
                         ": requested device '", culprit->requested_device(), "'", GroupNote(group),
                         " matches no available device",
                         options_.allow_soft_placement
                             ? " (soft placement relaxes only the device type and id)"
                             : " (allow_soft_placement would let the placer pick another device)",
                         ". Available devices: ", AvailableDevices());
}

Status Placer::NoKernelError(const Group& group, const std::vector<int>& candidates) const {
  std::vector<std::string> types;
  for (int d : candidates) {
    const std::string& type = devices_[d].type;
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
  }
  std::string request = group.requesters.empty() ? ""
                                                 : StrCat(" matching the requested device '",
                                                          ParsedNameToString(group.spec), "'");
  std::string hint = group.requesters.empty() || options_.allow_soft_placement
                         ? ""
                         : "; allow_soft_placement would let the placer pick another device";
  for (const Node* member : group.members) {
    bool has_some = false;
    for (int d : candidates) has_some = has_some || HasKernel(*member, d);
    if (!has_some) {
      return InvalidArgument("Cannot assign a device for ", FormatNodeForError(member->def()),
                             ": no kernel for op '", member->type_string(), "' on device type ",
                             StrJoin(types, " or "), request, GroupNote(group), hint);
    }
  }
  return InvalidArgument(
      "Cannot assign a device for ", FormatNodeForError(group.members.front()->def()),
      ": no single device of type ", StrJoin(types, " or "), request,
      " has kernels for every node of its colocation group", GroupNote(group), hint);
}

}  // namespace weft
