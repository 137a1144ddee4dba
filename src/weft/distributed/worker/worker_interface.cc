#include "weft/distributed/worker/worker_interface.h"

#include "weft/core/notification.h"

namespace weft {

Status WaitForCall(const std::function<void(StatusCallback)>& start) {
  Notification done;
  Status status;
  start([&](const Status& call_status) {
    status = call_status;
    done.Notify();
  });
  done.WaitForNotification();
  return status;
}

Status WorkerInterface::GetStatus(CallOptions* options, const proto::GetStatusRequest& request,
                                  proto::GetStatusResponse* response) {
  return WaitForCall(
      [&](StatusCallback done) { GetStatusAsync(options, &request, response, done); });
}

Status WorkerInterface::CreateWorkerSession(CallOptions* options,
                                            const proto::CreateWorkerSessionRequest& request,
                                            proto::CreateWorkerSessionResponse* response) {
  return WaitForCall(
      [&](StatusCallback done) { CreateWorkerSessionAsync(options, &request, response, done); });
}

Status WorkerInterface::DeleteWorkerSession(CallOptions* options,
                                            const proto::DeleteWorkerSessionRequest& request,
                                            proto::DeleteWorkerSessionResponse* response) {
  return WaitForCall(
      [&](StatusCallback done) { DeleteWorkerSessionAsync(options, &request, response, done); });
}

Status WorkerInterface::RegisterGraph(CallOptions* options,
                                      const proto::RegisterGraphRequest& request,
                                      proto::RegisterGraphResponse* response) {
  return WaitForCall(
      [&](StatusCallback done) { RegisterGraphAsync(options, &request, response, done); });
}

Status WorkerInterface::DeregisterGraph(CallOptions* options,
                                        const proto::DeregisterGraphRequest& request,
                                        proto::DeregisterGraphResponse* response) {
  return WaitForCall(
      [&](StatusCallback done) { DeregisterGraphAsync(options, &request, response, done); });
}

Status WorkerInterface::RunGraph(CallOptions* options, const proto::RunGraphRequest& request,
                                 proto::RunGraphResponse* response) {
  return WaitForCall(
      [&](StatusCallback done) { RunGraphAsync(options, &request, response, done); });
}

Status WorkerInterface::CleanupGraph(CallOptions* options,
                                     const proto::CleanupGraphRequest& request,
                                     proto::CleanupGraphResponse* response) {
  return WaitForCall(
      [&](StatusCallback done) { CleanupGraphAsync(options, &request, response, done); });
}

Status WorkerInterface::RecvTensor(CallOptions* options, const proto::RecvTensorRequest& request,
                                   TensorResponse* response) {
  return WaitForCall(
      [&](StatusCallback done) { RecvTensorAsync(options, &request, response, done); });
}

Status WorkerInterface::CompleteGroup(CallOptions* options,
                                      const proto::CompleteGroupRequest& request,
                                      proto::CompleteGroupResponse* response) {
  return WaitForCall(
      [&](StatusCallback done) { CompleteGroupAsync(options, &request, response, done); });
}

void WorkerInterface::CompleteGroupAsync(CallOptions* /*options*/,
                                         const proto::CompleteGroupRequest* request,
                                         proto::CompleteGroupResponse* /*response*/,
                                         StatusCallback done) {
  done(Unimplemented("this worker leads no collective groups (group_key ", request->group_key(),
                     ")"));
}

}  // namespace weft
