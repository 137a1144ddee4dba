// What LocalCollectiveExecutor's collectives share (see runtime/internal/local_collective.h): the
// checks of every kind, and a full instance's path from staged inputs to every member's done.
#include <algorithm>

#include "weft/framework/copy_tensor.h"
#include "weft/runtime/internal/local_collective.h"

namespace weft::internal {
namespace {

using CopyFn = std::function<void(StatusCallback)>;

// Runs every copy in `copies` (each calls its argument when done); the last to finish calls `done`
// with the first error (or OK). `copies` must not be empty.
void CopyAllAsync(const std::shared_ptr<CollectiveInstance>& instance, std::vector<CopyFn> copies,
                  StatusCallback done) {
  instance->copies_left.store(static_cast<int>(copies.size()), std::memory_order_relaxed);
  auto on_copied = [instance, done = std::move(done)](const Status& status) {
    if (!status.ok()) {
      MutexLock lock(instance->copy_mu);
      if (instance->copy_status.ok()) instance->copy_status = status;
    }
    if (instance->copies_left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    Status first;
    {
      MutexLock lock(instance->copy_mu);
      first = instance->copy_status;
    }
    done(first);
  };
  for (auto& copy : copies) copy(on_copied);
}

void Run(std::shared_ptr<CollectiveInstance> instance) {
  switch (instance->kind) {
    case CollectiveKind::kAllReduce:
      RunAllReduce(std::move(instance));
      return;
    case CollectiveKind::kBroadcast:
      RunBroadcast(std::move(instance));
      return;
    case CollectiveKind::kAllGather:
      RunAllGather(std::move(instance));
      return;
  }
}

}  // namespace

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kAllGather:
      return "all-gather";
  }
  return "unknown collective";
}

CollectiveMember NewMember(CollectiveKind kind, const CollectiveParams& params, DeviceBase* device,
                           StatusCallback done) {
  CollectiveMember member;
  member.kind = kind;
  member.device = device;
  member.params = params;
  member.done = std::move(done);
  return member;
}

std::string InstanceLabel(const CollectiveParams& params) {
  return StrCat("collective instance (group_key ", params.group_key, ", instance_key ",
                params.instance_key, ")");
}

Status CheckMember(const CollectiveInstance& instance, const CollectiveMember& member) {
  const std::string& label = instance.label;
  if (member.params.group_size < 1) {
    return InvalidArgument(label, ": member on device '", member.device->name(),
                           "' has group_size ", member.params.group_size,
                           "; it must be at least 1");
  }
  if (!instance.members.empty()) {
    const CollectiveMember& first = instance.members.front();
    // Checked first: a member of another kind differs in everything else too.
    if (first.kind != member.kind) {
      return InvalidArgument(label, ": member on device '", member.device->name(), "' calls ",
                             CollectiveKindName(member.kind), ", but member on device '",
                             first.device->name(), "' calls ", CollectiveKindName(first.kind));
    }
    for (const CollectiveMember& other : instance.members) {
      if (other.device->name() == member.device->name()) {
        return InvalidArgument(label, ": device '", member.device->name(), "' joined twice");
      }
    }
    if (first.params.group_size != member.params.group_size) {
      return Mismatch(label, first, member, "group_size", first.params.group_size,
                      member.params.group_size);
    }
  }
  switch (member.kind) {
    case CollectiveKind::kAllReduce:
      return CheckAllReduceMember(instance, member);
    case CollectiveKind::kBroadcast:
      return CheckBroadcastMember(instance, member);
    case CollectiveKind::kAllGather:
      return CheckAllGatherMember(instance, member);
  }
  return Internal(label, ": unknown collective kind");
}

void FinishInstance(CollectiveInstance& instance, const Status& status) {
  std::vector<CollectiveMember> members = std::move(instance.members);
  instance.members.clear();
  instance.targets.clear();
  for (CollectiveMember& member : members) member.inputs.clear();
  for (CollectiveMember& member : members) member.done(status);
}

void DeliverOutputs(const std::shared_ptr<CollectiveInstance>& instance) {
  std::vector<CopyFn> copies;
  for (CollectiveMember& member : instance->members) {
    if (member.is_source) continue;  // a broadcast's source keeps its own value
    if (member.outputs != nullptr) member.outputs->assign(instance->targets.size(), Tensor());
    for (size_t i = 0; i < instance->targets.size(); ++i) {
      if (member.device->HasHostMemory()) {
        member.Output(i) = instance->targets[i];
        continue;
      }
      copies.push_back([&member, i, result = instance->targets[i]](auto on_copied) {
        CopyTensorAsync(nullptr, member.device, {}, result,
                        [&member, i, on_copied](const Status& status, Tensor output) {
                          if (status.ok()) member.Output(i) = std::move(output);
                          on_copied(status);
                        });
      });
    }
  }
  if (copies.empty()) {
    FinishInstance(*instance, Status::OK());
    return;
  }
  CopyAllAsync(instance, std::move(copies), [instance](const Status& status) {
    FinishInstance(*instance, status.WithContext(instance->label));
  });
}

void StartCollective(std::shared_ptr<CollectiveInstance> instance, DeviceBase* last) {
  std::vector<CollectiveMember>& members = instance->members;
  if (members.size() == 1) {
    // Alone, a member's result is its input (a broadcast's lone member is its source).
    CollectiveMember& member = members[0];
    if (member.kind == CollectiveKind::kAllReduce) {
      *member.outputs = member.inputs;
    } else if (!member.is_source) {
      *member.output = member.inputs[0];
    }
    FinishInstance(*instance, Status::OK());
    return;
  }
  // Ranks follow device names, so the order of a sum or a concatenation does not depend on
  // arrival order.
  std::sort(members.begin(), members.end(),
            [](const CollectiveMember& a, const CollectiveMember& b) {
              return a.device->name() < b.device->name();
            });
  instance->last = last;
  std::vector<CopyFn> copies;
  for (CollectiveMember& member : members) {
    for (Tensor& input : member.inputs) {
      if (input.IsInHostMemory()) continue;
      copies.push_back([&member, &input](auto on_copied) {
        CopyTensorAsync(member.device, nullptr, {}, input,
                        [&input, on_copied](const Status& status, Tensor on_host) {
                          if (status.ok()) input = std::move(on_host);
                          on_copied(status);
                        });
      });
    }
  }
  if (copies.empty()) {
    Run(std::move(instance));
    return;
  }
  CopyAllAsync(instance, std::move(copies), [instance](const Status& status) {
    if (!status.ok()) {
      FinishInstance(*instance, status.WithContext(instance->label));
      return;
    }
    Run(instance);
  });
}

}  // namespace weft::internal
