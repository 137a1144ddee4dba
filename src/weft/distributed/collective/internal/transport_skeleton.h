// TransportSkeleton: the part of AllReduce, Broadcast and AllGather that every transport shares,
// written once: refusing calls on a poisoned transport with the first error, checking the
// arguments and building the operation's identity, starting its deadline, poisoning on failure
// (the first error sticks), and StartAbort. A transport derives from it and supplies the
// algorithms (moving bytes between members, naming the members it waited for in vain) and how it
// tells its peers about a failure. Thread-safety: as CollectiveTransport (one caller at a time;
// StartAbort from any thread).
#pragma once

#include <string>
#include <vector>

#include "weft/core/status.h"
#include "weft/core/tensor.h"
#include "weft/distributed/collective/collective_transport.h"
#include "weft/distributed/collective/internal/transport_util.h"

namespace weft::internal {

class TransportSkeleton : public CollectiveTransport {
 public:
  explicit TransportSkeleton(const TransportOptions& options) : options_(options) {}

  int rank() const final { return options_.rank; }
  int world_size() const final { return options_.world_size; }

  Status AllReduce(const TransportOp& op, const std::vector<Tensor>& inputs, double divisor,
                   std::vector<Tensor>* outputs) final;
  Status Broadcast(const TransportOp& op, int root, Tensor* value) final;
  Status AllGather(const TransportOp& op, const Tensor& input, Tensor* output) final;
  void StartAbort(const Status& status) final {
    poison_.StartAbort(status);
    WakeBlockedCall();
  }

 protected:
  // The algorithms, called with checked arguments and the operation's deadline. A failure they
  // return poisons the transport (through Fail, after Explain).
  virtual Status RunAllReduce(const std::string& label, const FlatAllReduce& flat,
                              const Deadline& deadline) = 0;
  // `value` is the root's tensor on the root, else where the root's bytes go.
  virtual Status RunBroadcast(const std::string& label, const OpIdentity& identity, int root,
                              Tensor* value, const Deadline& deadline) = 0;
  // `output` is allocated (world_size rows of input's first dimension).
  virtual Status RunAllGather(const std::string& label, const OpIdentity& identity,
                              const Tensor& input, Tensor* output, const Deadline& deadline) = 0;
  // Wakes the call blocked in an algorithm, if any, after StartAbort poisoned the transport.
  virtual void WakeBlockedCall() = 0;
  // Poisons the transport with `status` unless it already is, tells the peers the transport's way,
  // and returns the first error. Also called with the first error when a call finds the transport
  // poisoned.
  virtual Status Fail(const Status& status) = 0;
  // What a failed algorithm's status should also say (how far each member got, say).
  virtual Status Explain(const Status& status) { return status; }
  // Called after each operation that succeeded.
  virtual void Completed(const OpIdentity& identity) { (void)identity; }

  std::string Name(int rank) const { return MemberName(options_, rank); }

  const TransportOptions options_;
  TransportPoison poison_;

 private:
  // The first error once poisoned (through Fail, so the peers hear of it), else OK.
  Status CheckPoisoned() {
    Status status = poison_.status();
    return status.ok() ? status : Fail(status);
  }
  Status Finish(const Status& status, const OpIdentity& identity) {
    if (!status.ok()) return Fail(Explain(status));
    Completed(identity);
    return status;
  }
};

}  // namespace weft::internal
