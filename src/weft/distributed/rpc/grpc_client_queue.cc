#include "weft/distributed/rpc/grpc_client_queue.h"

#include <thread>

#include "weft/core/tsan_annotations.h"

namespace weft {

GrpcClientQueue& GrpcClientQueue::Get() {
  // Leaked on purpose: calls may complete while the process exits.
  static GrpcClientQueue* const instance = new GrpcClientQueue();
  return *instance;
}

GrpcClientQueue::GrpcClientQueue() {
  std::thread([this] { Loop(); }).detach();
}

void* GrpcClientQueue::NewTag(std::function<void(bool ok)> callback) {
  auto* tag = new std::function<void(bool)>(std::move(callback));
  // The tag is made as the call is handed to gRPC: everything the caller wrote for the call comes
  // before its completion, which gRPC's queue orders where ThreadSanitizer cannot see it.
  tsan::HappensBefore(tag);
  return tag;
}

void GrpcClientQueue::Loop() {
  void* tag = nullptr;
  bool ok = false;
  while (queue_.Next(&tag, &ok)) {
    tsan::HappensAfter(tag);
    auto* callback = static_cast<std::function<void(bool)>*>(tag);
    (*callback)(ok);
    delete callback;
  }
}

}  // namespace weft
