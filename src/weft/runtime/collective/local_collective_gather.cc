// LocalCollectiveExecutor's broadcast and all-gather (see the header): their members' checks and
// their computations on staged host inputs; joining, staging and delivery are shared with the
// all-reduce (runtime/internal/local_collective.h).
#include <cstring>
#include <string>
#include <vector>

#include "weft/core/str_util.h"
#include "weft/runtime/collective/local_collective_executor.h"
#include "weft/runtime/internal/local_collective.h"

namespace weft {

namespace internal {
namespace {

// What a broadcast member brings: the source its value, a receiver what its kernel expects.
DataType BroadcastDtype(const CollectiveMember& member) {
  return member.is_source ? member.inputs[0].dtype() : member.expected_dtype;
}
const TensorShape& BroadcastShape(const CollectiveMember& member) {
  return member.is_source ? member.inputs[0].shape() : member.expected_shape;
}
// "sends float32 [2,3]" or "expects float32 [2,3]".
std::string DescribeBroadcastMember(const CollectiveMember& member) {
  return StrCat(member.is_source ? "sends " : "expects ", DataTypeName(BroadcastDtype(member)), " ",
                BroadcastShape(member));
}

}  // namespace

Status CheckBroadcastMember(const CollectiveInstance& instance, const CollectiveMember& member) {
  const std::string& label = instance.label;
  const std::string& device = member.device->name();
  bool has_source = member.is_source;
  for (const CollectiveMember& other : instance.members) {
    if (other.is_source && member.is_source) {
      return InvalidArgument(label, ": members on devices '", other.device->name(), "' and '",
                             device, "' are both the source of the broadcast");
    }
    has_source = has_source || other.is_source;
  }
  if (!instance.members.empty()) {
    const CollectiveMember& first = instance.members.front();
    if (BroadcastDtype(first) != BroadcastDtype(member) ||
        !(BroadcastShape(first) == BroadcastShape(member))) {
      return InvalidArgument(label, ": member on device '", device, "' ",
                             DescribeBroadcastMember(member), ", but member on device '",
                             first.device->name(), "' ", DescribeBroadcastMember(first));
    }
  }
  // The member that fills the group is the last chance to find the source.
  if (!has_source && static_cast<int>(instance.members.size()) + 1 == member.params.group_size) {
    std::vector<std::string> devices;
    for (const CollectiveMember& other : instance.members) {
      devices.push_back(StrCat("'", other.device->name(), "'"));
    }
    devices.push_back(StrCat("'", device, "'"));
    return InvalidArgument(label, ": none of the ", devices.size(),
                           " members of the broadcast is its source (devices ",
                           StrJoin(devices, ", "), ")");
  }
  return Status::OK();
}

Status CheckAllGatherMember(const CollectiveInstance& instance, const CollectiveMember& member) {
  const std::string& label = instance.label;
  const Tensor& input = member.inputs[0];
  if (input.dims() < 1) {
    return InvalidArgument(label, ": member on device '", member.device->name(),
                           "' gives a scalar; all-gather needs at least one dimension");
  }
  if (input.dtype() == DataType::kInvalid || input.dtype() == DataType::kResource) {
    return InvalidArgument(label, ": member on device '", member.device->name(), "' gives ",
                           DataTypeName(input.dtype()), ", which all-gather cannot concatenate");
  }
  if (instance.members.empty()) return Status::OK();
  const CollectiveMember& first = instance.members.front();
  const Tensor& reference = first.inputs[0];
  if (reference.dtype() != input.dtype()) {
    return Mismatch(label, first, member, "input of dtype", DataTypeName(reference.dtype()),
                    DataTypeName(input.dtype()));
  }
  if (!(reference.shape() == input.shape())) {
    return Mismatch(label, first, member, "input of shape", reference.shape(), input.shape());
  }
  return Status::OK();
}

void RunBroadcast(std::shared_ptr<CollectiveInstance> instance) {
  // The source's (staged) value is the result: receivers in host memory share its buffer.
  for (const CollectiveMember& member : instance->members) {
    if (member.is_source) instance->targets = {member.inputs[0]};
  }
  DeliverOutputs(instance);
}

void RunAllGather(std::shared_ptr<CollectiveInstance> instance) {
  const std::vector<CollectiveMember>& members = instance->members;
  const Tensor& first = members[0].inputs[0];
  std::vector<int64_t> dims = first.shape().dim_sizes();
  dims[0] *= static_cast<int64_t>(members.size());  // at most group_size times a valid dim
  StatusOr<TensorShape> shape = TensorShape::Create(dims);
  StatusOr<Tensor> gathered =
      shape.ok() ? Tensor::Allocate(first.dtype(), *shape) : StatusOr<Tensor>(shape.status());
  if (!gathered.ok()) {
    FinishInstance(*instance, gathered.status().WithContext(instance->label));
    return;
  }
  // Every input has the same size, so rank r's rows start at r times it.
  const size_t bytes = first.TotalBytes();
  char* out = static_cast<char*>(gathered->raw_data());
  for (size_t rank = 0; rank < members.size() && bytes > 0; ++rank) {
    std::memcpy(out + rank * bytes, members[rank].inputs[0].raw_data(), bytes);
  }
  instance->targets = {std::move(gathered).value()};
  DeliverOutputs(instance);
}

}  // namespace internal

using internal::CollectiveKind;
using internal::CollectiveMember;

void LocalCollectiveExecutor::BroadcastAsync(const CollectiveParams& params, DeviceBase* device,
                                             bool is_source, DataType expected_dtype,
                                             const TensorShape& expected_shape, Tensor* value,
                                             StatusCallback done) {
  if (device == nullptr || value == nullptr) {
    done(InvalidArgument(internal::InstanceLabel(params),
                         ": a broadcast member needs a device and a value"));
    return;
  }
  CollectiveMember member =
      internal::NewMember(CollectiveKind::kBroadcast, params, device, std::move(done));
  member.is_source = is_source;
  member.expected_dtype = expected_dtype;
  member.expected_shape = expected_shape;
  if (is_source) {
    member.inputs = {*value};
  } else {
    member.output = value;
  }
  Join(std::move(member));
}

void LocalCollectiveExecutor::AllGatherAsync(const CollectiveParams& params, DeviceBase* device,
                                             Tensor input, Tensor* output, StatusCallback done) {
  if (device == nullptr || output == nullptr) {
    done(InvalidArgument(internal::InstanceLabel(params),
                         ": an all-gather member needs a device and an output"));
    return;
  }
  CollectiveMember member =
      internal::NewMember(CollectiveKind::kAllGather, params, device, std::move(done));
  member.inputs = {std::move(input)};
  member.output = output;
  Join(std::move(member));
}

}  // namespace weft
