#include "weft/distributed/rpc/grpc_remote_master.h"

#include <chrono>
#include <utility>

#include <grpcpp/client_context.h>

#include "weft/distributed/rpc/grpc_util.h"
#include "weft/master.grpc.pb.h"

namespace weft {
namespace {

class GrpcRemoteMaster final : public MasterInterface {
 public:
  GrpcRemoteMaster(std::string address, const TransportSecurity& security)
      : address_(std::move(address)),
        token_(security.token),
        stub_(proto::MasterService::NewStub(NewWeftChannel(address_, security))) {}

  Status CreateSession(CallOptions* options, const proto::CreateSessionRequest& request,
                       proto::CreateSessionResponse* response) override {
    return Call("CreateSession", options, /*wait_for_ready=*/true, request,
                [&](grpc::ClientContext* context) {
                  return stub_->CreateSession(context, request, response);
                });
  }
  Status ExtendSession(CallOptions* options, const proto::ExtendSessionRequest& request,
                       proto::ExtendSessionResponse* response) override {
    return Call("ExtendSession", options, false, request, [&](grpc::ClientContext* context) {
      return stub_->ExtendSession(context, request, response);
    });
  }
  Status RunStep(CallOptions* options, const proto::RunStepRequest& request,
                 proto::RunStepResponse* response) override {
    return Call("RunStep", options, false, request, [&](grpc::ClientContext* context) {
      return stub_->RunStep(context, request, response);
    });
  }
  Status CloseSession(CallOptions* options, const proto::CloseSessionRequest& request,
                      proto::CloseSessionResponse* response) override {
    return Call("CloseSession", options, false, request, [&](grpc::ClientContext* context) {
      return stub_->CloseSession(context, request, response);
    });
  }
  Status ListDevices(CallOptions* options, const proto::ListDevicesRequest& request,
                     proto::ListDevicesResponse* response) override {
    return Call("ListDevices", options, /*wait_for_ready=*/true, request,
                [&](grpc::ClientContext* context) {
                  return stub_->ListDevices(context, request, response);
                });
  }
  Status Reset(CallOptions* options, const proto::ResetRequest& request,
               proto::ResetResponse* response) override {
    return Call("Reset", options, false, request, [&](grpc::ClientContext* context) {
      return stub_->Reset(context, request, response);
    });
  }

 private:
  template <typename Invoke>
  Status Call(const char* method, CallOptions* options, bool wait_for_ready,
              const google::protobuf::MessageLite& request, Invoke invoke) {
    // gRPC's own coding cannot report a message over protobuf's limit; RunStep names the feed.
    Status fits = CheckMessageSize(request);
    if (!fits.ok()) return fits.WithContext(StrCat(method, " to master at ", address_));
    // Shared with the cancel callback, which may still be running when the call returns.
    auto context = std::make_shared<grpc::ClientContext>();
    if (!token_.empty()) context->AddMetadata(kTokenMetadataKey, token_);
    bool wait = wait_for_ready;
    if (options != nullptr) {
      if (options->timeout_ms() > 0) {
        context->set_deadline(std::chrono::system_clock::now() +
                              std::chrono::milliseconds(options->timeout_ms()));
      }
      wait = wait || options->wait_for_ready();
      options->SetCancelCallback([context] { context->TryCancel(); });
    }
    context->set_wait_for_ready(wait);
    grpc::Status status = invoke(context.get());
    if (options != nullptr) options->ClearCancelCallback();
    if (status.ok()) return Status::OK();
    return FromGrpcStatus(status).WithContext(StrCat(method, " to master at ", address_));
  }

  const std::string address_;
  const std::string token_;
  std::unique_ptr<proto::MasterService::Stub> stub_;
};

}  // namespace

std::unique_ptr<MasterInterface> NewGrpcRemoteMaster(std::string address,
                                                     const TransportSecurity& security) {
  return std::make_unique<GrpcRemoteMaster>(std::move(address), security);
}

}  // namespace weft
