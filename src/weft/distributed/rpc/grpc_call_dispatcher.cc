#include "weft/distributed/rpc/grpc_call_dispatcher.h"

#include <chrono>
#include <string>
#include <utility>

#include "weft/core/metrics.h"
#include "weft/distributed/rpc/transport_security.h"

namespace weft {
namespace {

// Server-side time of every call, from its start to its last write, by method and status code.
// Paths no handler serves are counted as "unknown": a client must not be able to grow the label
// set with made-up method names.
void RecordCall(const std::string& method, grpc::StatusCode code,
                std::chrono::steady_clock::time_point started) {
  static metrics::HistogramFamily* const seconds = metrics::Registry::Global().FindOrAddHistogram(
      "weft_rpc_server_seconds", "Time a server took to answer an RPC, by method and status code.",
      {"method", "code"});
  seconds->WithLabels({method, std::string(CodeName(static_cast<Code>(code)))})
      ->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace

// One per call; gRPC deletes nothing itself, so OnDone does.
class GrpcCallDispatcher::Reactor final : public grpc::ServerGenericBidiReactor {
 public:
  Reactor(const GrpcCallDispatcher* dispatcher, grpc::GenericCallbackServerContext* context)
      : dispatcher_(dispatcher), context_(context), started_(std::chrono::steady_clock::now()) {
    // Refused before its request is read: an unauthenticated peer gets no work done at all.
    if (!dispatcher_->token_.empty() && !HasToken()) {
      FinishWith(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                              "missing or wrong token for " + context_->method() +
                                  " (the server was started with --token-file or WEFT_TOKEN)"));
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      FinishWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              "no request message for " + context_->method()));
      return;
    }
    auto it = dispatcher_->handlers_.find(context_->method());
    if (it == dispatcher_->handlers_.end()) {
      FinishWith(
          grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown method " + context_->method()));
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
        code_ = status.error_code();
        StartWriteAndFinish(&response_, grpc::WriteOptions(), status);
      } else {
        FinishWith(status);
      }
    });
  }

  // The handler may still be running; cancelling lets it stop early, and it still calls done.
  void OnCancel() override { options_.StartCancel(); }

  void OnDone() override {
    const bool known = dispatcher_->HasMethod(context_->method());
    RecordCall(known ? context_->method() : "unknown", code_, started_);
    delete this;
  }

 private:
  bool HasToken() const {
    const auto& metadata = context_->client_metadata();
    auto found = metadata.find(kTokenMetadataKey);
    return found != metadata.end() &&
           TokenMatches(dispatcher_->token_,
                        std::string_view(found->second.data(), found->second.size()));
  }

  void FinishWith(const grpc::Status& status) {
    code_ = status.error_code();
    Finish(status);
  }

  const GrpcCallDispatcher* const dispatcher_;
  grpc::GenericCallbackServerContext* const context_;
  const std::chrono::steady_clock::time_point started_;
  grpc::StatusCode code_ = grpc::StatusCode::OK;
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
