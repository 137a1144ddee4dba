#include "weft/distributed/rpc/grpc_client_queue.h"

#include <thread>

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
  return new std::function<void(bool)>(std::move(callback));
}

void GrpcClientQueue::Loop() {
  void* tag = nullptr;
  bool ok = false;
  while (queue_.Next(&tag, &ok)) {
    auto* callback = static_cast<std::function<void(bool)>*>(tag);
    (*callback)(ok);
    delete callback;
  }
}

}  // namespace weft
