#include "weft/distributed/rpc/grpc_call_dispatcher.h"

#include <utility>

#include "weft/distributed/rpc/transport_security.h"

namespace weft {

// One per call; gRPC deletes nothing itself, so OnDone does.
class GrpcCallDispatcher::Reactor final : public grpc::ServerGenericBidiReactor {
 public:
  Reactor(const GrpcCallDispatcher* dispatcher, grpc::GenericCallbackServerContext* context)
      : dispatcher_(dispatcher), context_(context) {
    // Refused before its request is read: an unauthenticated peer gets no work done at all.
    if (!dispatcher_->token_.empty() && !HasToken()) {
      Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "missing or wrong token for " + context_->method() +
                              " (the server was started with --token-file or WEFT_TOKEN)"));
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "no request message for " + context_->method()));
      return;
    }
    auto it = dispatcher_->handlers_.find(context_->method());
    if (it == dispatcher_->handlers_.end()) {
      Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown method " + context_->method()));
      return;
    }
    it->second(request_, &response_, &options_, [this](const grpc::Status& status) {
      // Whatever the handler held of the request is no longer needed.
      request_.Clear();
      if (status.ok()) {
        if (!response_.Valid()) {
          grpc::Slice empty;
          response_ = grpc::ByteBuffer(&empty, 1);
        }
        StartWriteAndFinish(&response_, grpc::WriteOptions(), status);
      } else {
        Finish(status);
      }
    });
  }

  // The handler may still be running; cancelling lets it stop early, and it still calls done.
  void OnCancel() override { options_.StartCancel(); }

  void OnDone() override { delete this; }

 private:
  bool HasToken() const {
    const auto& metadata = context_->client_metadata();
    auto found = metadata.find(kTokenMetadataKey);
    return found != metadata.end() &&
           TokenMatches(dispatcher_->token_,
                        std::string_view(found->second.data(), found->second.size()));
  }

  const GrpcCallDispatcher* const dispatcher_;
  grpc::GenericCallbackServerContext* const context_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  CallOptions options_;
};

void GrpcCallDispatcher::RegisterMethod(const std::string& path, Handler handler) {
  handlers_[path] = std::move(handler);
}

grpc::ServerGenericBidiReactor* GrpcCallDispatcher::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  return new Reactor(this, context);
}

}  // namespace weft
