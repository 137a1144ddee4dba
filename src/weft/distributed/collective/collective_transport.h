// CollectiveTransport: how the processes of one collective group move and reduce bytes. There is
// one object per process per group; its members are ranked 0..world_size()-1, the same order on
// every member. Every member must call the same operations in the same order (the distributed
// CollectiveExecutor orders them); each call carries its instance's identity, and a member whose
// call differs (another instance or sequence, dtype, element count or shape) fails on every member
// with InvalidArgument naming both members and their values. A member that does not arrive within
// the timeout fails the others with DeadlineExceeded naming the members that never arrived and the
// last operation each member completed.
//
// Implementations are registered by name in collective_transport_registry.h (shared memory, TCP,
// hierarchical). Calls block; one thread at a time may call the operations. StartAbort may be
// called from any thread, and wakes a blocked call. After any failure the transport is poisoned:
// every later call fails with the first error (members may disagree about what happened next).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/status.h"
#include "weft/core/tensor.h"

namespace weft {

// The identity of one operation, checked across members.
struct TransportOp {
  int64_t instance_key = 0;
  int64_t sequence = 0;  // how many times this group ran this instance before, on every member
  std::string label;     // "collective instance (group_key 1, instance_key 2)", for errors
  // Waited beyond TransportOptions::timeout. A transport built from others sets it on a later
  // stage's call, so that an earlier stage's verdict (naming the member that never arrived)
  // reaches the later stage before that stage times out on its own peer.
  std::chrono::milliseconds extra_wait{0};
};

struct TransportOptions {
  int rank = 0;
  int world_size = 1;
  // Member names for errors, indexed by rank ("/job:worker/replica:0/task:1").
  std::vector<std::string> member_names;
  // Shared by every member of the group and unique in the job: names shared-memory segments,
  // checked in TCP handshakes.
  std::string group_token;
  // How long one operation (or the connection of the group) waits for the other members.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// What a transport made while its group was being resolved (a listening socket), kept by its
// member until the transport connects with it; closed when destroyed. Not shared between threads.
class TransportListener {
 public:
  virtual ~TransportListener() = default;
  // What the other members dial: "host:port" for a TCP listener.
  virtual std::string address() const = 0;
};

class CollectiveTransport {
 public:
  virtual ~CollectiveTransport() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // The element-wise sum over members of `inputs` (float32 or float64, all one dtype, host memory;
  // the same count and shapes on every member), divided by `divisor` when it is not 1, into
  // `outputs` (resized and freshly allocated: inputs are never written). Every member gets bitwise
  // the same outputs.
  virtual Status AllReduce(const TransportOp& op, const std::vector<Tensor>& inputs, double divisor,
                           std::vector<Tensor>* outputs) = 0;
  // Copies the tensor of member `root` into every member's `value`: on the root `value` is read;
  // elsewhere it must already have the root's dtype and shape and is overwritten in place.
  virtual Status Broadcast(const TransportOp& op, int root, Tensor* value) = 0;
  // `output` (allocated here) is the members' `input`s (same dtype and shape on every member, at
  // least one dimension) concatenated along dimension 0 in rank order.
  virtual Status AllGather(const TransportOp& op, const Tensor& input, Tensor* output) = 0;

  // Fails the blocked operation, if any, and every later one with `status`.
  virtual void StartAbort(const Status& status) = 0;
};

}  // namespace weft
