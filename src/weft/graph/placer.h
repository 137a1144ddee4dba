// Placer: assigns every node of a graph to one of a list of devices, the way the reference
// system's placer does for a session.
//
// Rules, in order of strength:
//  - Colocation groups stay together. A node that takes a resource input (a variable handle) is
//    colocated with the node producing it, so a VarHandleOp and its reads, assigns and
//    ResourceApply* updates share a device; a `_class` attr holding "loc:@other" colocates a node
//    with the node named `other` (nodes naming the same absent node are colocated with each
//    other). Groups are built with union-find.
//  - A node that already has an assigned device keeps it, and pulls its group there.
//  - The requested devices of a group's members ("/device:CPU:1", "/job:localhost", "/cpu:0",
//    "/device:CPU:*") are merged; the group goes to the first device, in list order, that matches
//    the merged spec and has a kernel for every member.
//  - A group with no request goes to the default device when it has kernels for every member,
//    else to the first device that does.
// Errors (InvalidArgument, naming nodes, ops and requests): two members request conflicting
// devices; a request matches no device (the message lists the available devices); no matching
// device has kernels for every member. With allow_soft_placement, a conflict in device type or id
// is dropped, and a group whose request cannot be met goes to a device matching the request's
// job/replica/task (the default device when it qualifies) that has the kernels. Job, replica or
// task conflicts stay errors, as in the reference system.
//
// Run() changes assigned_device_name of nodes only when it succeeds. The Placer borrows the graph
// and the kernel registry; neither may change while Run() executes. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "weft/core/status.h"
#include "weft/framework/device_name_utils.h"
#include "weft/framework/kernel_registry.h"
#include "weft/graph/graph.h"

namespace weft {

struct PlacerOptions {
  bool allow_soft_placement = false;
  // Logs "node: (Op): device" for every node at INFO.
  bool log_device_placement = false;
};

// One device a node can be placed on.
struct DeviceDescription {
  std::string name;  // full name, "/job:localhost/replica:0/task:0/device:CPU:0"
  std::string type;  // the kernel registry's device type, "CPU"; empty: the type in `name`
};

class Placer {
 public:
  // `devices`: the available devices (full names), in preference order. `default_device`: index
  // into `devices` for nodes without a request. `kernels`: asked whether a node has a kernel for a
  // device type; null means every op runs on every device.
  Placer(Graph* graph, std::vector<DeviceDescription> devices, int default_device,
         const KernelRegistry* kernels, PlacerOptions options = {});

  // Sets assigned_device_name on every node. FailedPrecondition when there are no devices.
  Status Run();

 private:
  struct Group;

  Status ParseDevices();
  Status BuildGroups(std::vector<Group>* groups) const;
  Status ColocateByAttr(std::vector<int>* parent) const;
  Status MergeRequests(Group* group) const;
  Status ApplyAssignedDevice(Group* group) const;
  StatusOr<int> ChooseDevice(const Group& group) const;
  StatusOr<int> SoftPlace(const Group& group) const;

  bool SupportsAll(const Group& group, int device) const;
  bool HasKernel(const Node& node, int device) const;
  std::string AvailableDevices() const;
  std::string GroupNote(const Group& group) const;
  Status NoMatchError(const Group& group) const;
  Status NoKernelError(const Group& group, const std::vector<int>& candidates) const;

  Graph* graph_;
  std::vector<DeviceDescription> devices_;
  std::vector<ParsedDeviceName> parsed_devices_;
  int default_device_;
  const KernelRegistry* kernels_;
  PlacerOptions options_;
};

}  // namespace weft
