// LocalCollectiveExecutor (see the header): members join an instance under one lock, and the last
// to join starts a reduce-scatter + all-gather in shared memory, one slice per member's device.
#include "weft/runtime/collective/local_collective_executor.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>

#include <Eigen/Core>

#include "weft/core/thread_pool.h"
#include "weft/framework/copy_tensor.h"
#include "weft/framework/device_base.h"

namespace weft {

namespace internal {

struct AllReduceMember {
  DeviceBase* device = nullptr;
  CollectiveParams params;
  std::vector<Tensor> inputs;
  std::vector<Tensor>* outputs = nullptr;
  CollectiveExecutor::DoneCallback done;
};

// Members join under the executor's lock while the instance is kJoining. Once it is kFull the
// reduction owns `members` and `targets` without a lock: each slice task writes only its own slice,
// and `slices_left` orders every slice before the finishing thread reads them; `copies_left` does
// the same for the copies into and out of host memory. `state`, `status` and `label` are read under
// the executor's lock only, and never change after kFull.
struct AllReduceInstance {
  enum class State { kJoining, kFull, kFailed };

  std::string label;  // "collective instance (group_key 1, instance_key 2)"
  State state = State::kJoining;
  Status status;  // why it failed, when kFailed
  std::vector<AllReduceMember> members;
  // targets[i]: the host buffer tensor i is reduced into, shared by the members in host memory and
  // copied to each member with memory of its own.
  std::vector<Tensor> targets;
  std::atomic<int> slices_left{0};
  std::atomic<int> copies_left{0};
  DeviceBase* last = nullptr;  // the device of the member that completed the instance

  Mutex copy_mu;
  Status copy_status WEFT_GUARDED_BY(copy_mu);  // the first failed copy
};

}  // namespace internal

namespace {

using internal::AllReduceInstance;
using internal::AllReduceMember;

// Below this many bytes read by the whole reduction, handing slices to other devices' threads
// costs more than it saves (a wake-up is ~30 us here, while one thread sums ~1 MB in ~90 us).
constexpr size_t kMinParallelBytes = size_t{1} << 20;
// Output elements reduced per block: one block of the output stays in L1 while each member's
// input is added to it.
constexpr size_t kBlockBytes = 16 * 1024;

std::string InstanceLabel(const CollectiveParams& params) {
  return StrCat("collective instance (group_key ", params.group_key, ", instance_key ",
                params.instance_key, ")");
}

// Checks a member's own params: the ones every member must get right regardless of the others.
Status CheckOwnParams(const std::string& label, const AllReduceMember& member) {
  const std::string& device = member.device->name();
  const CollectiveParams& params = member.params;
  if (params.group_size < 1) {
    return InvalidArgument(label, ": member on device '", device, "' has group_size ",
                           params.group_size, "; it must be at least 1");
  }
  if (params.merge_op != "Add") {
    return InvalidArgument(label, ": member on device '", device, "' has merge_op '",
                           params.merge_op, "'; only 'Add' is supported");
  }
  if (params.final_op != "Id" && params.final_op != "Div") {
    return InvalidArgument(label, ": member on device '", device, "' has final_op '",
                           params.final_op, "'; expected 'Id' or 'Div'");
  }
  for (size_t i = 0; i < member.inputs.size(); ++i) {
    DataType dtype = member.inputs[i].dtype();
    if (dtype != DataType::kFloat && dtype != DataType::kDouble) {
      return InvalidArgument(label, ": member on device '", device, "' gives tensor ", i, " of ",
                             DataTypeName(dtype), "; all-reduce supports float32 and float64");
    }
  }
  return Status::OK();
}

// "<label>: member on device 'b' has <what> <theirs>, but member on device 'a' has <ours>".
template <typename A, typename B>
Status Mismatch(const std::string& label, const AllReduceMember& first,
                const AllReduceMember& member, std::string_view what, const A& expected,
                const B& got) {
  return InvalidArgument(label, ": member on device '", member.device->name(), "' has ", what, " ",
                         got, ", but member on device '", first.device->name(), "' has ", expected);
}

// Checks that `member` may join `instance`: valid on its own, a device not yet in it, and agreeing
// with the first member on everything.
Status CheckMember(const AllReduceInstance& instance, const AllReduceMember& member) {
  WEFT_RETURN_IF_ERROR(CheckOwnParams(instance.label, member));
  if (instance.members.empty()) return Status::OK();
  const std::string& label = instance.label;
  const AllReduceMember& first = instance.members.front();
  for (const AllReduceMember& other : instance.members) {
    if (other.device->name() == member.device->name()) {
      return InvalidArgument(label, ": device '", member.device->name(), "' joined twice");
    }
  }
  const CollectiveParams& a = first.params;
  const CollectiveParams& b = member.params;
  if (a.group_size != b.group_size) {
    return Mismatch(label, first, member, "group_size", a.group_size, b.group_size);
  }
  if (a.merge_op != b.merge_op)
    return Mismatch(label, first, member, "merge_op", a.merge_op, b.merge_op);
  if (a.final_op != b.final_op)
    return Mismatch(label, first, member, "final_op", a.final_op, b.final_op);
  if (first.inputs.size() != member.inputs.size()) {
    return Mismatch(label, first, member, "tensor count", first.inputs.size(),
                    member.inputs.size());
  }
  for (size_t i = 0; i < first.inputs.size(); ++i) {
    const Tensor& x = first.inputs[i];
    const Tensor& y = member.inputs[i];
    if (x.dtype() != y.dtype()) {
      return Mismatch(label, first, member, StrCat("tensor ", i, " of dtype"),
                      DataTypeName(x.dtype()), DataTypeName(y.dtype()));
    }
    if (!(x.shape() == y.shape())) {
      return Mismatch(label, first, member, StrCat("tensor ", i, " of shape"), x.shape(),
                      y.shape());
    }
  }
  return Status::OK();
}

// Elements [begin, end) of out = inputs[0] + inputs[1] + ... (in that order), divided by
// `divisor` when it is positive. Blocked so each output block is written once from L1.
template <typename T>
void ReduceRange(const std::vector<const T*>& inputs, T* out, int64_t begin, int64_t end,
                 int divisor) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  constexpr int64_t kBlock = kBlockBytes / sizeof(T);
  const size_t n = inputs.size();
  for (int64_t start = begin; start < end; start += kBlock) {
    const int64_t len = std::min(kBlock, end - start);
    auto in = [&](size_t m) { return Eigen::Map<const Array>(inputs[m] + start, len); };
    Eigen::Map<Array> block(out + start, len);
    size_t m = std::min<size_t>(n, 4);
    switch (m) {
      case 1:
        block = in(0);
        break;
      case 2:
        block = in(0) + in(1);
        break;
      case 3:
        block = in(0) + in(1) + in(2);
        break;
      default:
        block = in(0) + in(1) + in(2) + in(3);
        break;
    }
    for (; m < n; ++m) block += in(m);
    if (divisor > 0) block /= static_cast<T>(divisor);
  }
}

// Slice `rank` of `num_elements` split over `group_size` members, in whole cache lines so no two
// members write the same line; the last slices may be short or empty.
std::pair<int64_t, int64_t> SliceRange(int64_t num_elements, int rank, int group_size,
                                       size_t element_size) {
  const int64_t line = static_cast<int64_t>(64 / element_size);
  int64_t chunk = (num_elements + group_size - 1) / group_size;
  chunk = (chunk + line - 1) / line * line;
  const int64_t begin = std::min(num_elements, chunk * rank);
  return {begin, std::min(num_elements, begin + chunk)};
}

template <typename T>
void ReduceSliceOf(AllReduceInstance& instance, size_t tensor, int rank) {
  const int group_size = static_cast<int>(instance.members.size());
  Tensor& target = instance.targets[tensor];
  const auto [begin, end] = SliceRange(target.NumElements(), rank, group_size, sizeof(T));
  if (begin >= end) return;
  std::vector<const T*> inputs(group_size);
  for (int m = 0; m < group_size; ++m) inputs[m] = instance.members[m].inputs[tensor].data<T>();
  const bool mean = instance.members[0].params.final_op == "Div";
  ReduceRange<T>(inputs, target.data<T>(), begin, end, mean ? group_size : 0);
}

// Calls every member's done with `status` and releases the members; `instance` must be owned by
// the caller alone (all slices done, or the reduction never started).
void FinishInstance(AllReduceInstance& instance, const Status& status) {
  std::vector<AllReduceMember> members = std::move(instance.members);
  instance.members.clear();
  instance.targets.clear();
  for (AllReduceMember& member : members) member.inputs.clear();
  for (AllReduceMember& member : members) member.done(status);
}

// Reduces slice `rank` of every tensor; the last slice to finish calls every member's done.
// Copies `count` tensors, calling `copy(index, on_copied)` for each; the last to finish calls
// `then` with the first error (or OK). `count` must be positive.
void CopyAll(const std::shared_ptr<AllReduceInstance>& instance,
             std::vector<std::function<void(std::function<void(const Status&)>)>> copies,
             std::function<void(const Status&)> then) {
  instance->copies_left.store(static_cast<int>(copies.size()), std::memory_order_relaxed);
  auto on_copied = [instance, then = std::move(then)](const Status& status) {
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
    then(first);
  };
  for (auto& copy : copies) copy(on_copied);
}

// Copies the sums to the members with memory of their own, then calls every member's done.
void DeliverOutputs(const std::shared_ptr<AllReduceInstance>& instance) {
  std::vector<std::function<void(std::function<void(const Status&)>)>> copies;
  for (AllReduceMember& member : instance->members) {
    if (member.device->HasHostMemory()) continue;
    for (size_t i = 0; i < instance->targets.size(); ++i) {
      copies.push_back([&member, i, sum = instance->targets[i]](auto on_copied) {
        CopyTensorAsync(nullptr, member.device, {}, sum,
                        [&member, i, on_copied](const Status& status, Tensor output) {
                          if (status.ok()) (*member.outputs)[i] = std::move(output);
                          on_copied(status);
                        });
      });
    }
  }
  if (copies.empty()) {
    FinishInstance(*instance, Status::OK());
    return;
  }
  CopyAll(instance, std::move(copies), [instance](const Status& status) {
    FinishInstance(*instance, status.WithContext(instance->label));
  });
}

void RunSlice(const std::shared_ptr<AllReduceInstance>& instance, int rank) {
  for (size_t i = 0; i < instance->targets.size(); ++i) {
    if (instance->targets[i].dtype() == DataType::kFloat) {
      ReduceSliceOf<float>(*instance, i, rank);
    } else {
      ReduceSliceOf<double>(*instance, i, rank);
    }
  }
  if (instance->slices_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    DeliverOutputs(instance);
  }
}

// Allocates one host buffer per tensor for the sums and hands it to the members in host memory as
// their output (the others get copies once it is summed).
Status AllocateOutputs(AllReduceInstance& instance) {
  std::vector<AllReduceMember>& members = instance.members;
  const std::vector<Tensor>& shapes = members[0].inputs;
  instance.targets.assign(shapes.size(), Tensor());
  for (AllReduceMember& member : members) member.outputs->assign(shapes.size(), Tensor());
  for (size_t i = 0; i < shapes.size(); ++i) {
    StatusOr<Tensor> buffer = Tensor::Allocate(shapes[i].dtype(), shapes[i].shape());
    if (!buffer.ok()) return buffer.status().WithContext(instance.label);
    instance.targets[i] = std::move(buffer).value();
    for (AllReduceMember& member : members) {
      if (member.device->HasHostMemory()) (*member.outputs)[i] = instance.targets[i];
    }
  }
  return Status::OK();
}

void Reduce(std::shared_ptr<AllReduceInstance> instance);

// Runs a full instance: called once, by the thread of the member that completed it (`last`).
// Inputs outside host memory are first copied to host memory by their devices. Touches neither
// the executor nor, after the last slice, the instance.
void StartReduction(std::shared_ptr<AllReduceInstance> instance, DeviceBase* last) {
  std::vector<AllReduceMember>& members = instance->members;
  if (members.size() == 1) {
    *members[0].outputs = members[0].inputs;
    FinishInstance(*instance, Status::OK());
    return;
  }
  // Ranks follow device names, so the order of the sum does not depend on arrival order.
  std::sort(members.begin(), members.end(), [](const AllReduceMember& a, const AllReduceMember& b) {
    return a.device->name() < b.device->name();
  });
  instance->last = last;
  std::vector<std::function<void(std::function<void(const Status&)>)>> copies;
  for (AllReduceMember& member : members) {
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
    Reduce(std::move(instance));
    return;
  }
  CopyAll(instance, std::move(copies), [instance](const Status& status) {
    if (!status.ok()) {
      FinishInstance(*instance, status.WithContext(instance->label));
      return;
    }
    Reduce(instance);
  });
}

// Sums the staged inputs, one slice per member's device.
void Reduce(std::shared_ptr<AllReduceInstance> instance) {
  std::vector<AllReduceMember>& members = instance->members;
  DeviceBase* const last = instance->last;
  Status status = AllocateOutputs(*instance);
  if (!status.ok()) {
    FinishInstance(*instance, status);
    return;
  }
  const int group_size = static_cast<int>(members.size());
  size_t bytes = 0;
  for (const Tensor& input : members[0].inputs) bytes += input.TotalBytes() * group_size;
  // Decide every slice's thread before starting any: once the last one finishes, the step may
  // end and its devices go away.
  std::vector<ThreadPool*> pools(group_size, nullptr);
  if (bytes >= kMinParallelBytes) {
    for (int rank = 0; rank < group_size; ++rank) {
      if (members[rank].device != last) pools[rank] = members[rank].device->intra_op_pool();
    }
  }
  instance->slices_left.store(group_size, std::memory_order_relaxed);
  for (int rank = 0; rank < group_size; ++rank) {
    if (pools[rank] != nullptr)
      pools[rank]->Schedule([instance, rank] { RunSlice(instance, rank); });
  }
  for (int rank = 0; rank < group_size; ++rank) {
    if (pools[rank] == nullptr) RunSlice(instance, rank);
  }
}

}  // namespace

bool SharesHostMemory(const DeviceBase* device) { return device->HasHostMemory(); }

LocalCollectiveExecutor::LocalCollectiveExecutor() = default;
LocalCollectiveExecutor::~LocalCollectiveExecutor() = default;

void LocalCollectiveExecutor::AllReduceAsync(const CollectiveParams& params, DeviceBase* device,
                                             std::vector<Tensor> inputs,
                                             std::vector<Tensor>* outputs, DoneCallback done) {
  if (device == nullptr || outputs == nullptr) {
    done(InvalidArgument(InstanceLabel(params), ": a member needs a device and outputs"));
    return;
  }
  AllReduceMember member{device, params, std::move(inputs), outputs, std::move(done)};
  std::shared_ptr<AllReduceInstance> full;
  std::vector<AllReduceMember> failed;  // members of an instance this member failed
  Status status;
  {
    MutexLock lock(mu_);
    std::shared_ptr<AllReduceInstance>& slot = instances_[{params.group_key, params.instance_key}];
    if (slot == nullptr) {
      slot = std::make_shared<AllReduceInstance>();
      slot->label = InstanceLabel(params);
    }
    AllReduceInstance& instance = *slot;
    if (!abort_status_.ok()) {
      status = abort_status_.WithContext(instance.label);
    } else if (instance.state == AllReduceInstance::State::kFailed) {
      status = instance.status;
    } else if (instance.state == AllReduceInstance::State::kFull) {
      status = InvalidArgument(instance.label, ": device '", device->name(),
                               "' joined after all members had");
    } else {
      status = CheckMember(instance, member);
      if (!status.ok()) {
        instance.state = AllReduceInstance::State::kFailed;
        instance.status = status;
        failed = std::move(instance.members);
        instance.members.clear();
      } else {
        instance.members.push_back(std::move(member));
        if (static_cast<int>(instance.members.size()) == params.group_size) {
          instance.state = AllReduceInstance::State::kFull;
          full = slot;
        }
      }
    }
  }
  // Callbacks run outside the lock. This member's own done goes last: until it runs, the step
  // (and so this executor) stays alive.
  if (!status.ok()) {
    for (AllReduceMember& other : failed) other.done(status);
    member.done(status);
    return;
  }
  if (full != nullptr) StartReduction(std::move(full), device);
}

void LocalCollectiveExecutor::BroadcastAsync(const CollectiveParams& params, DeviceBase*, bool,
                                             DataType, const TensorShape&, Tensor*,
                                             DoneCallback done) {
  done(Unimplemented(InstanceLabel(params), ": broadcast is not implemented yet"));
}

void LocalCollectiveExecutor::AllGatherAsync(const CollectiveParams& params, DeviceBase*, Tensor,
                                             Tensor*, DoneCallback done) {
  done(Unimplemented(InstanceLabel(params), ": all-gather is not implemented yet"));
}

void LocalCollectiveExecutor::StartAbort(const Status& status) {
  std::vector<std::pair<AllReduceMember, Status>> waiting;
  {
    MutexLock lock(mu_);
    if (!abort_status_.ok()) return;  // the first abort wins
    abort_status_ = Status(status.ok() ? Code::kAborted : status.code(),
                           StrCat("collective ops aborted by: ",
                                  status.ok() ? "an abort without a reason" : status.message()));
    for (auto& [key, instance] : instances_) {
      if (instance->state != AllReduceInstance::State::kJoining) continue;
      instance->state = AllReduceInstance::State::kFailed;
      instance->status = abort_status_.WithContext(instance->label);
      for (AllReduceMember& member : instance->members) {
        waiting.emplace_back(std::move(member), instance->status);
      }
      instance->members.clear();
    }
  }
  for (auto& [member, member_status] : waiting) member.done(member_status);
}

}  // namespace weft
