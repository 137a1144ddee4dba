// GrpcClientQueue: one process-wide completion queue for client calls whose completion should run
// on the thread that polls the socket. gRPC's callback API hands each completion from its poller
// to a separate callback thread, and on this machine that wake-up costs as much as the network
// round trip itself; a thread blocked in CompletionQueue::Next polls and runs the callback itself
// (the reference runtime drives its RPCs the same way). Callbacks must be short: they run one at a
// time on that thread. Never destroyed (its thread outlives every call); thread-safe.
#pragma once

#include <functional>

#include <grpcpp/completion_queue.h>

namespace weft {

class GrpcClientQueue {
 public:
  // The process's queue, started on first use.
  static GrpcClientQueue& Get();

  grpc::CompletionQueue* queue() { return &queue_; }
  // A tag for one operation: `callback` runs once, on the queue's thread, with the operation's ok.
  void* NewTag(std::function<void(bool ok)> callback);

 private:
  GrpcClientQueue();
  void Loop();
  grpc::CompletionQueue queue_;
};

}  // namespace weft
