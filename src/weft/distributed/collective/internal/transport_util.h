// Pieces shared by the collective transports: the identity of one operation as it travels between
// members (a plain struct, the same bytes in shared memory and on the wire), the error messages
// that name members, flat views of a list of tensors, the summing kernels that add members' inputs
// in rank order, and the poisoned state every transport keeps. All but TransportPoison are values
// or pure functions.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/status.h"
#include "weft/core/tensor.h"
#include "weft/distributed/collective/collective_transport.h"

namespace weft::internal {

enum class OpKind : uint32_t { kAllReduce = 1, kBroadcast = 2, kAllGather = 3 };

// What one member called; every member of an operation must post equal identities. Trivially
// copyable: written into shared memory and sent in TCP headers as it is.
struct OpIdentity {
  int64_t instance_key = 0;
  int64_t sequence = 0;
  uint32_t kind = 0;   // OpKind
  uint32_t dtype = 0;  // DataType
  int64_t num_elements = 0;
  uint64_t shape_fingerprint = 0;  // of every tensor's shape, in order
  int64_t param = 0;               // Broadcast: the root; AllReduce: the divisor's bits
  int32_t num_tensors = 0;
  int32_t reserved = 0;
};
static_assert(sizeof(OpIdentity) == 56);

bool operator==(const OpIdentity& a, const OpIdentity& b);

// "AllReduce (instance_key 1, sequence 2) of 1001 float32 elements in 1 tensor, divisor 2".
std::string DescribeOp(const OpIdentity& op);
// The operation's label, or "collective instance_key N" when the caller gave none.
std::string OpLabel(const TransportOp& op);
// "/job:worker/replica:0/task:1 (rank 1)", or "rank 1" without names.
std::string MemberName(const TransportOptions& options, int rank);
// A sub-group's name for member `name` of rank `group_rank` in the whole group:
// "/job:worker/replica:0/task:2 (group rank 2)".
std::string SubGroupMemberName(const std::string& name, int group_rank);
// The task of member `rank` alone ("/job:worker/replica:0/task:1", also in a sub-group), or
// "rank 1" without names: how metrics name a peer.
std::string MemberTask(const TransportOptions& options, int rank);

// InvalidArgument naming both members and what each called, or OK when they agree.
Status CheckSameOp(const TransportOptions& options, const std::string& label, int rank,
                   const OpIdentity& mine, int peer, const OpIdentity& theirs);

// Checks the options every transport needs (rank in range, names sized to the group).
Status CheckOptions(const TransportOptions& options, std::string_view transport);

// The flat element range of an all-reduce: inputs concatenated (without a copy when there is one
// tensor) and an output buffer the outputs are carved from afterwards.
struct FlatAllReduce {
  OpIdentity identity;
  const char* input = nullptr;
  char* output = nullptr;
  size_t element_size = 0;
  Tensor input_storage;   // holds the concatenated inputs when there are several
  Tensor output_storage;  // the flat result
};
StatusOr<FlatAllReduce> PrepareAllReduce(const TransportOp& op, const std::vector<Tensor>& inputs,
                                         double divisor);
// Fills `outputs` from the flat result (one tensor: a reshaped view; several: fresh copies).
void FinishAllReduce(const std::vector<Tensor>& inputs, FlatAllReduce& flat,
                     std::vector<Tensor>* outputs);

// InvalidArgument unless `root` is a member of a group of `world_size`.
Status CheckBroadcastRoot(const TransportOp& op, int root, int world_size);
// Checks `root` and returns the broadcast's identity.
StatusOr<OpIdentity> PrepareBroadcast(const TransportOp& op, int root, int world_size,
                                      const Tensor& value);
// InvalidArgument unless `input` has a dimension to concatenate along.
Status CheckAllGatherInput(const TransportOp& op, const Tensor& input);
// Checks `input` and allocates `output` (world_size rows of input's first dimension).
StatusOr<OpIdentity> PrepareAllGather(const TransportOp& op, const Tensor& input, int world_size,
                                      Tensor* output);

// out[i] = inputs[0][i] + inputs[1][i] + ... (left to right, so every member that sums the same
// inputs gets the same bits), divided by `divisor` unless it is 1. `out` may alias an input.
// bfloat16 is summed in float32 and rounded once per call.
void SumInOrder(DataType dtype, const std::vector<const char*>& inputs, char* out, int64_t count,
                double divisor);
// acc[i] = acc[i] + in[i], then divided by `divisor` unless it is 1.
void AddInto(DataType dtype, char* acc, const char* in, int64_t count, double divisor);

// Elements [begin, end) of slice `index` when `count` elements are split into `parts` slices of
// whole cache lines (no two members write one line); trailing slices may be short or empty.
std::pair<int64_t, int64_t> SliceRange(int64_t count, int index, int parts, size_t element_size);

// A deadline that also tells how long is left, for poll and futex timeouts.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds timeout)
      : end_(std::chrono::steady_clock::now() + timeout) {}
  std::chrono::nanoseconds Remaining() const {
    auto left = end_ - std::chrono::steady_clock::now();
    return left.count() > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(left)
                            : std::chrono::nanoseconds(0);
  }
  bool Expired() const { return Remaining().count() == 0; }
  // Milliseconds left for poll(), rounded up, capped at `cap_ms`.
  int PollMs(int cap_ms) const;

 private:
  std::chrono::steady_clock::time_point end_;
};

// A transport's poisoned state (collective_transport.h: after any failure every later call fails
// with the first error). Kept here so that every transport keeps the first error the same way; each
// adds what telling its own peers takes. Thread-safe: StartAbort comes from any thread while the
// calling thread fails or checks.
class TransportPoison {
 public:
  // Keeps `status` unless a failure came first, and returns the first one. `*poisoned_now`, when
  // given, tells whether this call was the one that poisoned the transport.
  Status Poison(const Status& status, bool* poisoned_now = nullptr);
  // Poison, then raise the flag that blocked waits look at; the status is kept first, so a waiter
  // that sees the flag also finds the status.
  void StartAbort(const Status& status);
  // The first failure; OK while the transport is healthy.
  Status status() const;
  // Whether StartAbort was called: one atomic load, cheap enough for every turn of a wait loop.
  bool aborting() const { return aborting_.load(); }

 private:
  std::atomic<bool> aborting_{false};
  mutable Mutex mu_;
  Status first_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft::internal
