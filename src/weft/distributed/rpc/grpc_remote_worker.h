// GrpcRemoteWorker: the WorkerInterface of another task, over a gRPC channel with the generated
// stub's callback API. A CallOptions' deadline becomes the call's deadline and cancelling it
// cancels the call. Errors keep gRPC's code and name the method, the task and its address. Large
// RecvTensor values arrive over the bulk path when a BulkTransferClient is given. Every call
// carries `token` when it is not empty. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/channel.h>

#include "weft/distributed/rpc/bulk_transfer.h"
#include "weft/distributed/worker/worker_interface.h"
#include "weft/worker.grpc.pb.h"

namespace weft {

class GrpcRemoteWorker final : public WorkerInterface {
 public:
  // `address` is "host:port" of `task_name`; `bulk_client` may be null (no bulk path).
  GrpcRemoteWorker(std::string task_name, std::string address,
                   std::shared_ptr<grpc::Channel> channel,
                   std::shared_ptr<BulkTransferClient> bulk_client, std::string token);

  void GetStatusAsync(CallOptions* options, const proto::GetStatusRequest* request,
                      proto::GetStatusResponse* response, StatusCallback done) override;
  void CreateWorkerSessionAsync(CallOptions* options,
                                const proto::CreateWorkerSessionRequest* request,
                                proto::CreateWorkerSessionResponse* response,
                                StatusCallback done) override;
  void DeleteWorkerSessionAsync(CallOptions* options,
                                const proto::DeleteWorkerSessionRequest* request,
                                proto::DeleteWorkerSessionResponse* response,
                                StatusCallback done) override;
  void RegisterGraphAsync(CallOptions* options, const proto::RegisterGraphRequest* request,
                          proto::RegisterGraphResponse* response, StatusCallback done) override;
  void DeregisterGraphAsync(CallOptions* options, const proto::DeregisterGraphRequest* request,
                            proto::DeregisterGraphResponse* response, StatusCallback done) override;
  void RunGraphAsync(CallOptions* options, const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response, StatusCallback done) override;
  void CleanupGraphAsync(CallOptions* options, const proto::CleanupGraphRequest* request,
                         proto::CleanupGraphResponse* response, StatusCallback done) override;
  void RecvTensorAsync(CallOptions* options, const proto::RecvTensorRequest* request,
                       TensorResponse* response, StatusCallback done) override;
  void CompleteGroupAsync(CallOptions* options, const proto::CompleteGroupRequest* request,
                          proto::CompleteGroupResponse* response, StatusCallback done) override;

  const std::string& task_name() const { return task_name_; }
  const std::string& address() const { return address_; }

 private:
  // Starts `method` through `start` (which calls the stub) with `options` applied, and turns the
  // outcome into a weft Status naming the method, task and address.
  template <typename Request, typename Response, typename Start>
  void IssueAsync(const char* method, CallOptions* options, const Request* request,
                  Response* response, Start start, StatusCallback done);
  void FinishRecvTensorAsync(const proto::RecvTensorRequest* request,
                             std::shared_ptr<proto::RecvTensorResponse> wire,
                             TensorResponse* response, StatusCallback done);

  const std::string task_name_;
  const std::string address_;
  const std::string host_;
  std::unique_ptr<proto::WorkerService::Stub> stub_;
  std::shared_ptr<BulkTransferClient> bulk_client_;
  const std::string token_;
};

}  // namespace weft
