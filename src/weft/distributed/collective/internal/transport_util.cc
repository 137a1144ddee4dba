#include "weft/distributed/collective/internal/transport_util.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "weft/core/bfloat16_sum.h"

namespace weft::internal {
namespace {

// Elements summed per block: one block of the output stays in L1 while every input is added to it.
constexpr size_t kBlockBytes = 16 * 1024;

uint64_t Mix(uint64_t hash, uint64_t value) {
  // FNV-1a over the value's bytes: cheap, and enough to tell shapes apart in a check.
  for (int i = 0; i < 8; ++i) {
    hash ^= (value >> (8 * i)) & 0xff;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

uint64_t ShapeFingerprint(const std::vector<const TensorShape*>& shapes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  hash = Mix(hash, shapes.size());
  for (const TensorShape* shape : shapes) {
    hash = Mix(hash, static_cast<uint64_t>(shape->dims()));
    for (int64_t dim : shape->dim_sizes()) hash = Mix(hash, static_cast<uint64_t>(dim));
  }
  return hash;
}

// The identity of an operation on one tensor (a broadcast or an all-gather).
OpIdentity SingleTensorIdentity(const TransportOp& op, OpKind kind, const Tensor& tensor,
                                int64_t param) {
  return OpIdentity{op.instance_key,
                    op.sequence,
                    static_cast<uint32_t>(kind),
                    static_cast<uint32_t>(tensor.dtype()),
                    tensor.NumElements(),
                    ShapeFingerprint({&tensor.shape()}),
                    param,
                    1,
                    0};
}

std::string_view KindName(uint32_t kind) {
  switch (static_cast<OpKind>(kind)) {
    case OpKind::kAllReduce:
      return "AllReduce";
    case OpKind::kBroadcast:
      return "Broadcast";
    case OpKind::kAllGather:
      return "AllGather";
  }
  return "unknown operation";
}

template <typename T>
void SumBlocks(const std::vector<const char*>& inputs, char* out_bytes, int64_t count,
               double divisor) {
  constexpr int64_t kBlock = kBlockBytes / sizeof(T);
  const size_t n = inputs.size();
  T* out = reinterpret_cast<T*>(out_bytes);
  const T scale = static_cast<T>(divisor);
  for (int64_t start = 0; start < count; start += kBlock) {
    const int64_t len = std::min(kBlock, count - start);
    T* block = out + start;
    const T* first = reinterpret_cast<const T*>(inputs[0]) + start;
    if (n == 1) {
      for (int64_t i = 0; i < len; ++i) block[i] = first[i];
    } else {
      const T* second = reinterpret_cast<const T*>(inputs[1]) + start;
      for (int64_t i = 0; i < len; ++i) block[i] = first[i] + second[i];
    }
    for (size_t m = 2; m < n; ++m) {
      const T* next = reinterpret_cast<const T*>(inputs[m]) + start;
      for (int64_t i = 0; i < len; ++i) block[i] = block[i] + next[i];
    }
    if (divisor != 1.0) {
      for (int64_t i = 0; i < len; ++i) block[i] = block[i] / scale;
    }
  }
}

}  // namespace

bool operator==(const OpIdentity& a, const OpIdentity& b) {
  return a.instance_key == b.instance_key && a.sequence == b.sequence && a.kind == b.kind &&
         a.dtype == b.dtype && a.num_elements == b.num_elements &&
         a.shape_fingerprint == b.shape_fingerprint && a.param == b.param &&
         a.num_tensors == b.num_tensors;
}

std::string DescribeOp(const OpIdentity& op) {
  std::string text =
      StrCat(KindName(op.kind), " (instance_key ", op.instance_key, ", sequence ", op.sequence,
             ") of ", op.num_elements, " ", DataTypeName(static_cast<DataType>(op.dtype)),
             " elements in ", op.num_tensors, op.num_tensors == 1 ? " tensor" : " tensors");
  if (op.kind == static_cast<uint32_t>(OpKind::kBroadcast)) {
    text += StrCat(" from root ", op.param);
  } else if (op.kind == static_cast<uint32_t>(OpKind::kAllReduce)) {
    text += StrCat(", divisor ", std::bit_cast<double>(op.param));
  }
  text += StrCat(", shapes fingerprint ", op.shape_fingerprint);
  return text;
}

std::string OpLabel(const TransportOp& op) {
  return op.label.empty() ? StrCat("collective instance_key ", op.instance_key) : op.label;
}

namespace {
constexpr std::string_view kGroupRank = " (group rank ";
}  // namespace

std::string SubGroupMemberName(const std::string& name, int group_rank) {
  return StrCat(name, kGroupRank, group_rank, ")");
}

std::string MemberTask(const TransportOptions& options, int rank) {
  if (rank < 0 || rank >= static_cast<int>(options.member_names.size()) ||
      options.member_names[rank].empty()) {
    return StrCat("rank ", rank);
  }
  const std::string& name = options.member_names[rank];
  return name.substr(0, name.find(kGroupRank));
}

std::string MemberName(const TransportOptions& options, int rank) {
  if (rank >= 0 && rank < static_cast<int>(options.member_names.size()) &&
      !options.member_names[rank].empty()) {
    return StrCat(options.member_names[rank], " (rank ", rank, ")");
  }
  return StrCat("rank ", rank);
}

Status CheckSameOp(const TransportOptions& options, const std::string& label, int rank,
                   const OpIdentity& mine, int peer, const OpIdentity& theirs) {
  if (mine == theirs) return Status::OK();
  return InvalidArgument(label, ": members disagree about the operation: member ",
                         MemberName(options, rank), " calls ", DescribeOp(mine), "; member ",
                         MemberName(options, peer), " calls ", DescribeOp(theirs));
}

Status CheckOptions(const TransportOptions& options, std::string_view transport) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return InvalidArgument(transport, " transport of group '", options.group_token, "': rank ",
                           options.rank, " is outside a group of ", options.world_size);
  }
  if (!options.member_names.empty() &&
      static_cast<int>(options.member_names.size()) != options.world_size) {
    return InvalidArgument(transport, " transport of group '", options.group_token,
                           "': ", options.member_names.size(), " member names for a group of ",
                           options.world_size);
  }
  if (options.group_token.empty()) {
    return InvalidArgument(transport, " transport: the group token is empty");
  }
  return Status::OK();
}

StatusOr<FlatAllReduce> PrepareAllReduce(const TransportOp& op, const std::vector<Tensor>& inputs,
                                         double divisor) {
  const std::string label = OpLabel(op);
  if (inputs.empty()) return InvalidArgument(label, ": all-reduce of no tensors");
  if (!std::isfinite(divisor) || divisor == 0) {
    return InvalidArgument(label, ": all-reduce divisor ", divisor, " is not a finite non-zero");
  }
  const DataType dtype = inputs[0].dtype();
  std::vector<const TensorShape*> shapes;
  int64_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (t.dtype() != DataType::kFloat && t.dtype() != DataType::kDouble &&
        t.dtype() != DataType::kBFloat16) {
      return InvalidArgument(label, ": tensor ", i, " is ", DataTypeName(t.dtype()),
                             "; all-reduce supports float32, float64 and bfloat16");
    }
    if (t.dtype() != dtype) {
      return InvalidArgument(label, ": tensor ", i, " is ", DataTypeName(t.dtype()),
                             " but tensor 0 is ", DataTypeName(dtype));
    }
    if (!t.IsInHostMemory())
      return InvalidArgument(label, ": tensor ", i, " is not in host memory");
    shapes.push_back(&t.shape());
    total += t.NumElements();
  }
  FlatAllReduce flat;
  flat.element_size = DataTypeSize(dtype);
  flat.identity = OpIdentity{op.instance_key,
                             op.sequence,
                             static_cast<uint32_t>(OpKind::kAllReduce),
                             static_cast<uint32_t>(dtype),
                             total,
                             ShapeFingerprint(shapes),
                             std::bit_cast<int64_t>(divisor),
                             static_cast<int32_t>(inputs.size()),
                             0};
  WEFT_ASSIGN_OR_RETURN(flat.output_storage, Tensor::Allocate(dtype, TensorShape({total})));
  flat.output = static_cast<char*>(flat.output_storage.raw_data());
  if (inputs.size() == 1) {
    flat.input = static_cast<const char*>(inputs[0].raw_data());
    return flat;
  }
  WEFT_ASSIGN_OR_RETURN(flat.input_storage, Tensor::Allocate(dtype, TensorShape({total})));
  char* next = static_cast<char*>(flat.input_storage.raw_data());
  for (const Tensor& t : inputs) {
    if (t.TotalBytes() > 0) std::memcpy(next, t.raw_data(), t.TotalBytes());
    next += t.TotalBytes();
  }
  flat.input = static_cast<const char*>(flat.input_storage.raw_data());
  return flat;
}

void FinishAllReduce(const std::vector<Tensor>& inputs, FlatAllReduce& flat,
                     std::vector<Tensor>* outputs) {
  outputs->clear();
  if (inputs.size() == 1) {
    outputs->push_back(flat.output_storage.Reshaped(inputs[0].shape()));
    return;
  }
  const char* next = flat.output;
  for (const Tensor& t : inputs) {
    Tensor out(t.dtype(), t.shape());
    if (t.TotalBytes() > 0) std::memcpy(out.raw_data(), next, t.TotalBytes());
    next += t.TotalBytes();
    outputs->push_back(std::move(out));
  }
}

Status CheckBroadcastRoot(const TransportOp& op, int root, int world_size) {
  if (root >= 0 && root < world_size) return Status::OK();
  return InvalidArgument(OpLabel(op), ": broadcast root ", root, " is outside a group of ",
                         world_size);
}

StatusOr<OpIdentity> PrepareBroadcast(const TransportOp& op, int root, int world_size,
                                      const Tensor& value) {
  WEFT_RETURN_IF_ERROR(CheckBroadcastRoot(op, root, world_size));
  return SingleTensorIdentity(op, OpKind::kBroadcast, value, root);
}

Status CheckAllGatherInput(const TransportOp& op, const Tensor& input) {
  if (input.dims() >= 1) return Status::OK();
  return InvalidArgument(OpLabel(op), ": all-gather input ", input.shape().DebugString(),
                         " has no dimension to concatenate along");
}

StatusOr<OpIdentity> PrepareAllGather(const TransportOp& op, const Tensor& input, int world_size,
                                      Tensor* output) {
  WEFT_RETURN_IF_ERROR(CheckAllGatherInput(op, input));
  TensorShape shape = input.shape();
  shape.set_dim(0, input.dim_size(0) * world_size);
  WEFT_ASSIGN_OR_RETURN(*output, Tensor::Allocate(input.dtype(), shape));
  return SingleTensorIdentity(op, OpKind::kAllGather, input, 0);
}

void SumInOrder(DataType dtype, const std::vector<const char*>& inputs, char* out, int64_t count,
                double divisor) {
  if (count <= 0) return;
  if (dtype == DataType::kFloat) {
    SumBlocks<float>(inputs, out, count, divisor);
  } else if (dtype == DataType::kBFloat16) {
    std::vector<const bfloat16*> arrays;
    for (const char* input : inputs) arrays.push_back(reinterpret_cast<const bfloat16*>(input));
    SumBFloat16(arrays, reinterpret_cast<bfloat16*>(out), count, static_cast<float>(divisor));
  } else {
    WEFT_CHECK(dtype == DataType::kDouble) << DataTypeName(dtype);
    SumBlocks<double>(inputs, out, count, divisor);
  }
}

void AddInto(DataType dtype, char* acc, const char* in, int64_t count, double divisor) {
  SumInOrder(dtype, {acc, in}, acc, count, divisor);
}

std::pair<int64_t, int64_t> SliceRange(int64_t count, int index, int parts, size_t element_size) {
  const int64_t line = std::max<int64_t>(1, static_cast<int64_t>(64 / element_size));
  int64_t chunk = (count + parts - 1) / parts;
  chunk = (chunk + line - 1) / line * line;
  const int64_t begin = std::min(count, chunk * index);
  return {begin, std::min(count, begin + chunk)};
}

int Deadline::PollMs(int cap_ms) const {
  const auto left = Remaining();
  const int64_t ms = (left.count() + 999'999) / 1'000'000;
  return static_cast<int>(std::min<int64_t>(ms, cap_ms));
}

Status TransportPoison::Poison(const Status& status, bool* poisoned_now) {
  MutexLock lock(mu_);
  const bool was_ok = first_.ok();
  if (was_ok) first_ = status;
  if (poisoned_now != nullptr) *poisoned_now = was_ok;
  return first_;
}

void TransportPoison::StartAbort(const Status& status) {
  Poison(status).IgnoreError();
  aborting_.store(true);
}

Status TransportPoison::status() const {
  MutexLock lock(mu_);
  return first_;
}

}  // namespace weft::internal
