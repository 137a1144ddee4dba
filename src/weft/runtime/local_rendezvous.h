// LocalRendezvous: the in-process Rendezvous of ONE step. The runtime creates one per step and
// shares it among that step's partitions (executors), so two steps — even concurrent ones running
// the same graph — never see each other's tensors; it is destroyed when the step ends.
//
// Each key is used once per step: one Send and one Recv, in either order.
//  - Send with a Recv waiting calls the Recv's callback on the sending thread (outside the lock);
//    otherwise the value is kept until the Recv comes. Values are never copied: the receiver gets a
//    Tensor sharing the sender's buffer (resource handles pass as they are).
//  - A second Send of a key, or a second Recv of it, is AlreadyExists naming the key.
//  - A Recv whose recv_args.cancellation_manager is cancelled while it waits gets Cancelled naming
//    the key and is forgotten (a later Recv of the key may wait again). That manager must outlive
//    the wait (until `done` runs or the rendezvous is destroyed).
//  - StartAbort(status) fails every waiting Recv with `status`, drops kept values, and makes every
//    later Send and Recv fail with it (the first abort status sticks).
//  - Destroying the rendezvous fails any still-waiting Recv with Cancelled ("rendezvous
//  destroyed").
// Thread-safe. Callbacks may call back into the rendezvous.
#pragma once

#include <memory>

#include "weft/framework/rendezvous.h"

namespace weft {

class LocalRendezvous final : public Rendezvous {
 public:
  LocalRendezvous();
  ~LocalRendezvous() override;
  LocalRendezvous(const LocalRendezvous&) = delete;
  LocalRendezvous& operator=(const LocalRendezvous&) = delete;

  Status Send(const ParsedKey& key, const Args& send_args, const Tensor& value,
              bool is_dead) override;
  void RecvAsync(const ParsedKey& key, const Args& recv_args, DoneCallback done) override;
  void StartAbort(const Status& status) override;

 private:
  // The key table, shared with cancellation callbacks so a late one never touches a destroyed
  // rendezvous.
  struct Table;
  const std::shared_ptr<Table> table_;
};

}  // namespace weft
