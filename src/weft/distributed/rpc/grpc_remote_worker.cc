#include "weft/distributed/rpc/grpc_remote_worker.h"

#include <chrono>
#include <cstring>
#include <utility>

#include <grpcpp/client_context.h>

#include "weft/distributed/rpc/grpc_client_queue.h"
#include "weft/distributed/rpc/grpc_util.h"
#include "weft/framework/tensor_proto_util.h"

namespace weft {

GrpcRemoteWorker::GrpcRemoteWorker(std::string task_name, std::string address,
                                   std::shared_ptr<grpc::Channel> channel,
                                   std::shared_ptr<BulkTransferClient> bulk_client,
                                   std::string token)
    : task_name_(std::move(task_name)),
      address_(std::move(address)),
      host_(HostOfAddress(address_)),
      stub_(proto::WorkerService::NewStub(std::move(channel))),
      bulk_client_(std::move(bulk_client)),
      token_(std::move(token)) {}

template <typename Request, typename Response, typename Start>
void GrpcRemoteWorker::IssueAsync(const char* method, CallOptions* options, const Request* request,
                                  Response* response, Start start, StatusCallback done) {
  // gRPC's own coding cannot report a message over protobuf's limit; RunGraph names the feed.
  Status fits = CheckMessageSize(*request);
  if (!fits.ok()) {
    done(fits.WithContext(StrCat(method, " to ", task_name_, " at ", address_)));
    return;
  }
  // Shared with the cancel callback, which may still be running when the call completes.
  auto context = std::make_shared<grpc::ClientContext>();
  if (!token_.empty()) context->AddMetadata(kTokenMetadataKey, token_);
  if (options != nullptr) {
    if (options->timeout_ms() > 0) {
      context->set_deadline(std::chrono::system_clock::now() +
                            std::chrono::milliseconds(options->timeout_ms()));
    }
    context->set_wait_for_ready(options->wait_for_ready());
    options->SetCancelCallback([context] { context->TryCancel(); });
  }
  std::string prefix = StrCat(method, " to ", task_name_, " at ", address_);
  start(context.get(), request, response,
        [context, options, prefix = std::move(prefix), done = std::move(done)](grpc::Status s) {
          if (options != nullptr) options->ClearCancelCallback();
          if (s.ok()) {
            done(Status::OK());
          } else {
            done(FromGrpcStatus(s).WithContext(prefix));
          }
        });
}

void GrpcRemoteWorker::GetStatusAsync(CallOptions* options, const proto::GetStatusRequest* request,
                                      proto::GetStatusResponse* response, StatusCallback done) {
  IssueAsync(
      "GetStatus", options, request, response,
      [this](auto* context, auto* req, auto* resp, auto callback) {
        stub_->async()->GetStatus(context, req, resp, std::move(callback));
      },
      std::move(done));
}

void GrpcRemoteWorker::CreateWorkerSessionAsync(CallOptions* options,
                                                const proto::CreateWorkerSessionRequest* request,
                                                proto::CreateWorkerSessionResponse* response,
                                                StatusCallback done) {
  IssueAsync(
      "CreateWorkerSession", options, request, response,
      [this](auto* context, auto* req, auto* resp, auto callback) {
        stub_->async()->CreateWorkerSession(context, req, resp, std::move(callback));
      },
      std::move(done));
}

void GrpcRemoteWorker::DeleteWorkerSessionAsync(CallOptions* options,
                                                const proto::DeleteWorkerSessionRequest* request,
                                                proto::DeleteWorkerSessionResponse* response,
                                                StatusCallback done) {
  IssueAsync(
      "DeleteWorkerSession", options, request, response,
      [this](auto* context, auto* req, auto* resp, auto callback) {
        stub_->async()->DeleteWorkerSession(context, req, resp, std::move(callback));
      },
      std::move(done));
}

void GrpcRemoteWorker::RegisterGraphAsync(CallOptions* options,
                                          const proto::RegisterGraphRequest* request,
                                          proto::RegisterGraphResponse* response,
                                          StatusCallback done) {
  IssueAsync(
      "RegisterGraph", options, request, response,
      [this](auto* context, auto* req, auto* resp, auto callback) {
        stub_->async()->RegisterGraph(context, req, resp, std::move(callback));
      },
      std::move(done));
}

void GrpcRemoteWorker::DeregisterGraphAsync(CallOptions* options,
                                            const proto::DeregisterGraphRequest* request,
                                            proto::DeregisterGraphResponse* response,
                                            StatusCallback done) {
  IssueAsync(
      "DeregisterGraph", options, request, response,
      [this](auto* context, auto* req, auto* resp, auto callback) {
        stub_->async()->DeregisterGraph(context, req, resp, std::move(callback));
      },
      std::move(done));
}

void GrpcRemoteWorker::RunGraphAsync(CallOptions* options, const proto::RunGraphRequest* request,
                                     proto::RunGraphResponse* response, StatusCallback done) {
  // A step's RunGraph completes on the thread that polls for it (grpc_client_queue.h): it is on
  // the critical path of every step, and the master's part of the completion is short.
  IssueAsync(
      "RunGraph", options, request, response,
      [this](grpc::ClientContext* context, const proto::RunGraphRequest* req,
             proto::RunGraphResponse* resp, std::function<void(grpc::Status)> callback) {
        GrpcClientQueue& queue = GrpcClientQueue::Get();
        struct Call {
          std::unique_ptr<grpc::ClientAsyncResponseReader<proto::RunGraphResponse>> reader;
          grpc::Status status;
        };
        auto call = std::make_shared<Call>();
        call->reader = stub_->PrepareAsyncRunGraph(context, *req, queue.queue());
        call->reader->StartCall();
        call->reader->Finish(
            resp, &call->status,
            queue.NewTag([call, callback = std::move(callback)](bool) { callback(call->status); }));
      },
      std::move(done));
}

void GrpcRemoteWorker::CleanupGraphAsync(CallOptions* options,
                                         const proto::CleanupGraphRequest* request,
                                         proto::CleanupGraphResponse* response,
                                         StatusCallback done) {
  IssueAsync(
      "CleanupGraph", options, request, response,
      [this](auto* context, auto* req, auto* resp, auto callback) {
        stub_->async()->CleanupGraph(context, req, resp, std::move(callback));
      },
      std::move(done));
}

void GrpcRemoteWorker::CompleteGroupAsync(CallOptions* options,
                                          const proto::CompleteGroupRequest* request,
                                          proto::CompleteGroupResponse* response,
                                          StatusCallback done) {
  IssueAsync(
      "CompleteGroup", options, request, response,
      [this](auto* context, auto* req, auto* resp, auto callback) {
        stub_->async()->CompleteGroup(context, req, resp, std::move(callback));
      },
      std::move(done));
}

void GrpcRemoteWorker::RecvTensorAsync(CallOptions* options,
                                       const proto::RecvTensorRequest* request,
                                       TensorResponse* response, StatusCallback done) {
  // The caller's request stays untouched; the copy asks for the bulk path.
  auto wire_request = std::make_shared<proto::RecvTensorRequest>(*request);
  wire_request->set_bulk_ok(bulk_client_ != nullptr);
  auto wire = std::make_shared<proto::RecvTensorResponse>();
  IssueAsync(
      "RecvTensor", options, wire_request.get(), wire.get(),
      [this](auto* context, auto* req, auto* resp, auto callback) {
        stub_->async()->RecvTensor(context, req, resp, std::move(callback));
      },
      [this, wire_request, wire, response, done = std::move(done)](const Status& status) {
        if (!status.ok()) {
          done(status);
          return;
        }
        FinishRecvTensorAsync(wire_request.get(), wire, response, done);
      });
}

void GrpcRemoteWorker::FinishRecvTensorAsync(const proto::RecvTensorRequest* request,
                                             std::shared_ptr<proto::RecvTensorResponse> wire,
                                             TensorResponse* response, StatusCallback done) {
  const std::string what = StrCat("RecvTensor of ", request->rendezvous_key(), " (step ",
                                  request->step_id(), ") from ", task_name_, " at ", address_);
  response->is_dead = wire->is_dead();
  if (wire->is_dead() && !wire->has_bulk() && wire->tensor().tensor_content().empty()) {
    // A dead value carries no tensor.
    response->tensor = Tensor();
    done(Status::OK());
    return;
  }
  if (!wire->has_bulk()) {
    StatusOr<Tensor> tensor = TensorFromProto(wire->tensor());
    if (!tensor.ok()) {
      done(tensor.status().WithContext(what));
      return;
    }
    response->tensor = std::move(tensor).value();
    done(Status::OK());
    return;
  }
  if (bulk_client_ == nullptr) {
    done(Internal(what, ": the peer replied over the bulk path, which this side does not use"));
    return;
  }
  StatusOr<DataType> dtype = FromProto(wire->tensor().dtype());
  StatusOr<TensorShape> shape = TensorShapeFromProto(wire->tensor().tensor_shape());
  if (!dtype.ok() || !shape.ok()) {
    done((dtype.ok() ? shape.status() : dtype.status()).WithContext(what));
    return;
  }
  StatusOr<Tensor> allocated = Tensor::Allocate(*dtype, *shape);
  if (!allocated.ok()) {
    done(allocated.status().WithContext(what));
    return;
  }
  auto tensor = std::make_shared<Tensor>(std::move(allocated).value());
  const uint64_t num_bytes = static_cast<uint64_t>(wire->bulk().num_bytes());
  if (wire->bulk().num_bytes() < 0 || num_bytes != tensor->TotalBytes()) {
    done(Internal(what, ": the bulk transfer announces ", wire->bulk().num_bytes(),
                  " bytes for a tensor of ", tensor->TotalBytes()));
    return;
  }
  bulk_client_->FetchAsync(host_, wire->bulk().port(), wire->bulk().ticket(), tensor->raw_data(),
                           num_bytes,
                           [tensor, response, what, done = std::move(done)](const Status& status) {
                             if (!status.ok()) {
                               done(status.WithContext(what));
                               return;
                             }
                             if (tensor->dtype() == DataType::kBool) {
                               auto* bytes = static_cast<uint8_t*>(tensor->raw_data());
                               for (size_t i = 0; i < tensor->TotalBytes(); ++i)
                                 bytes[i] = bytes[i] != 0 ? 1 : 0;
                             }
                             response->tensor = std::move(*tensor);
                             done(Status::OK());
                           });
}

}  // namespace weft
