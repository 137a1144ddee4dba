// LocalCollectiveExecutor (see the header): members join an instance under one lock, and the last
// to join starts its collective (runtime/internal/local_collective.h). Here: the join, abort, and
// the all-reduce, a reduce-scatter + all-gather in shared memory, in pieces that the last member
// and the other members' device threads claim.
#include "weft/runtime/collective/local_collective_executor.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <type_traits>

#include <Eigen/Core>

#include "weft/core/bfloat16_sum.h"
#include "weft/core/thread_pool.h"
#include "weft/framework/device_base.h"
#include "weft/runtime/internal/local_collective.h"

namespace weft {

namespace internal {
namespace {

// Output bytes of one piece of an all-reduce: the unit a thread claims. Small enough that the
// threads that join late still find pieces left, large enough that claiming costs nothing.
constexpr size_t kPieceBytes = 64 * 1024;
// Output elements reduced per block: one block of the output stays in L1 while each member's
// input is added to it.
constexpr size_t kBlockBytes = 16 * 1024;

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

template <typename T>
void ReducePieceOf(CollectiveInstance& instance, const AllReducePiece& piece) {
  const int group_size = static_cast<int>(instance.members.size());
  Tensor& target = instance.targets[piece.tensor];
  std::vector<const T*> inputs(group_size);
  for (int m = 0; m < group_size; ++m) {
    inputs[m] = instance.members[m].inputs[piece.tensor].data<T>() + piece.begin;
  }
  const bool mean = instance.members[0].params.final_op == "Div";
  const int64_t count = piece.end - piece.begin;
  if constexpr (std::is_same_v<T, bfloat16>) {
    SumBFloat16(inputs, target.data<T>() + piece.begin, count,
                mean ? static_cast<float>(group_size) : 1.0f);
  } else {
    ReduceRange<T>(inputs, target.data<T>() + piece.begin, 0, count, mean ? group_size : 0);
  }
}

// Claims and reduces pieces until none is left; whoever finishes the last piece delivers the sums.
// Every thread that can help runs this: the last member to join at once, the other members'
// device threads whenever they wake. So a thread that wakes late finds the work done instead of
// the step waiting for it, on a machine where waking a thread is slow as on one where it is fast.
void ReducePieces(const std::shared_ptr<CollectiveInstance>& instance) {
  const int64_t count = static_cast<int64_t>(instance->pieces.size());
  while (true) {
    const int64_t p = instance->next_piece.fetch_add(1, std::memory_order_relaxed);
    if (p >= count) return;
    const AllReducePiece& piece = instance->pieces[p];
    switch (instance->targets[piece.tensor].dtype()) {
      case DataType::kFloat:
        ReducePieceOf<float>(*instance, piece);
        break;
      case DataType::kBFloat16:
        ReducePieceOf<bfloat16>(*instance, piece);
        break;
      default:
        ReducePieceOf<double>(*instance, piece);
        break;
    }
    if (instance->pieces_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      DeliverOutputs(instance);
      return;
    }
  }
}

// Every tensor's elements in pieces of whole cache lines, about kPieceBytes of output each.
std::vector<AllReducePiece> CutIntoPieces(const std::vector<Tensor>& targets) {
  std::vector<AllReducePiece> pieces;
  for (size_t i = 0; i < targets.size(); ++i) {
    const size_t element = DataTypeSize(targets[i].dtype());
    const int64_t per_piece = static_cast<int64_t>(std::max<size_t>(kPieceBytes / element, 1));
    const int64_t n = targets[i].NumElements();
    for (int64_t begin = 0; begin < n; begin += per_piece) {
      pieces.push_back({i, begin, std::min(n, begin + per_piece)});
    }
  }
  return pieces;
}

// Allocates one host buffer per tensor for the sums (DeliverOutputs hands them to the members).
Status AllocateTargets(CollectiveInstance& instance) {
  const std::vector<Tensor>& shapes = instance.members[0].inputs;
  instance.targets.assign(shapes.size(), Tensor());
  for (size_t i = 0; i < shapes.size(); ++i) {
    StatusOr<Tensor> buffer = Tensor::Allocate(shapes[i].dtype(), shapes[i].shape());
    if (!buffer.ok()) return buffer.status().WithContext(instance.label);
    instance.targets[i] = std::move(buffer).value();
  }
  return Status::OK();
}

}  // namespace

Status CheckAllReduceMember(const CollectiveInstance& instance, const CollectiveMember& member) {
  const std::string& label = instance.label;
  const std::string& device = member.device->name();
  const CollectiveParams& params = member.params;
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
    if (dtype != DataType::kFloat && dtype != DataType::kDouble && dtype != DataType::kBFloat16) {
      return InvalidArgument(label, ": member on device '", device, "' gives tensor ", i, " of ",
                             DataTypeName(dtype),
                             "; all-reduce supports float32, float64 and bfloat16");
    }
  }
  if (instance.members.empty()) return Status::OK();
  const CollectiveMember& first = instance.members.front();
  const CollectiveParams& a = first.params;
  if (a.merge_op != params.merge_op)
    return Mismatch(label, first, member, "merge_op", a.merge_op, params.merge_op);
  if (a.final_op != params.final_op)
    return Mismatch(label, first, member, "final_op", a.final_op, params.final_op);
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

// Sums the staged inputs in pieces, on this thread and any member's device thread that comes.
void RunAllReduce(std::shared_ptr<CollectiveInstance> instance) {
  std::vector<CollectiveMember>& members = instance->members;
  DeviceBase* const last = instance->last;
  Status status = AllocateTargets(*instance);
  if (!status.ok()) {
    FinishInstance(*instance, status);
    return;
  }
  instance->pieces = CutIntoPieces(instance->targets);
  if (instance->pieces.empty()) {  // nothing but empty tensors
    DeliverOutputs(instance);
    return;
  }
  instance->pieces_left.store(static_cast<int64_t>(instance->pieces.size()),
                              std::memory_order_relaxed);
  // Offer the other members' device threads a share, then work here. The helpers are all found
  // before the first is offered: once the last piece is done the members are released, and the
  // step may end and its devices go away.
  std::vector<ThreadPool*> helpers;
  if (instance->pieces.size() > 1) {
    for (const CollectiveMember& member : members) {
      ThreadPool* pool = member.device != last ? member.device->intra_op_pool() : nullptr;
      if (pool != nullptr) helpers.push_back(pool);
    }
  }
  for (ThreadPool* pool : helpers) pool->Schedule([instance] { ReducePieces(instance); });
  ReducePieces(instance);
}

}  // namespace internal

using internal::CollectiveInstance;
using internal::CollectiveKind;
using internal::CollectiveMember;

bool SharesHostMemory(const DeviceBase* device) { return device->HasHostMemory(); }

LocalCollectiveExecutor::LocalCollectiveExecutor() = default;
LocalCollectiveExecutor::~LocalCollectiveExecutor() = default;

void LocalCollectiveExecutor::AllReduceAsync(const CollectiveParams& params, DeviceBase* device,
                                             std::vector<Tensor> inputs,
                                             std::vector<Tensor>* outputs, StatusCallback done) {
  if (device == nullptr || outputs == nullptr) {
    done(InvalidArgument(internal::InstanceLabel(params), ": a member needs a device and outputs"));
    return;
  }
  CollectiveMember member =
      internal::NewMember(CollectiveKind::kAllReduce, params, device, std::move(done));
  member.inputs = std::move(inputs);
  member.outputs = outputs;
  Join(std::move(member));
}

void LocalCollectiveExecutor::Join(CollectiveMember member) {
  const CollectiveParams params = member.params;
  DeviceBase* const device = member.device;
  std::shared_ptr<CollectiveInstance> full;
  std::vector<CollectiveMember> failed;  // members of an instance this member failed
  Status status;
  {
    MutexLock lock(mu_);
    std::shared_ptr<CollectiveInstance>& slot = instances_[{params.group_key, params.instance_key}];
    if (slot == nullptr) {
      slot = std::make_shared<CollectiveInstance>();
      slot->label = internal::InstanceLabel(params);
      slot->kind = member.kind;
    }
    CollectiveInstance& instance = *slot;
    if (!abort_status_.ok()) {
      status = abort_status_.WithContext(instance.label);
    } else if (instance.state == CollectiveInstance::State::kFailed) {
      status = instance.status;
    } else if (instance.state == CollectiveInstance::State::kFull) {
      status = InvalidArgument(instance.label, ": device '", device->name(),
                               "' joined after all members had");
    } else {
      status = internal::CheckMember(instance, member);
      if (!status.ok()) {
        instance.state = CollectiveInstance::State::kFailed;
        instance.status = status;
        failed = std::move(instance.members);
        instance.members.clear();
      } else {
        instance.members.push_back(std::move(member));
        if (static_cast<int>(instance.members.size()) == params.group_size) {
          instance.state = CollectiveInstance::State::kFull;
          full = slot;
        }
      }
    }
  }
  // Callbacks run outside the lock. This member's own done goes last: until it runs, the step
  // (and so this executor) stays alive.
  if (!status.ok()) {
    for (CollectiveMember& other : failed) other.done(status);
    member.done(status);
    return;
  }
  if (full != nullptr) internal::StartCollective(std::move(full), device);
}

void LocalCollectiveExecutor::StartAbort(const Status& status) {
  std::vector<std::pair<CollectiveMember, Status>> waiting;
  {
    MutexLock lock(mu_);
    if (!abort_status_.ok()) return;  // the first abort wins
    abort_status_ = Status(status.ok() ? Code::kAborted : status.code(),
                           StrCat("collective ops aborted by: ",
                                  status.ok() ? "an abort without a reason" : status.message()));
    for (auto& [key, instance] : instances_) {
      if (instance->state != CollectiveInstance::State::kJoining) continue;
      instance->state = CollectiveInstance::State::kFailed;
      instance->status = abort_status_.WithContext(instance->label);
      for (CollectiveMember& member : instance->members) {
        waiting.emplace_back(std::move(member), instance->status);
      }
      instance->members.clear();
    }
  }
  for (auto& [member, member_status] : waiting) member.done(member_status);
}

}  // namespace weft
