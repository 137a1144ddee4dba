// WorkerInterface: the WorkerService as the master and peer workers call it. Every call is
// asynchronous: `done` runs exactly once, on some thread, after the response is filled in; the
// request, response and `options` must outlive it. Every call takes CallOptions (null: none) whose
// deadline and cancellation the transport honours: callers give every call that does not wait on
// a step's computation a deadline (the master's worker timeout); RunGraph and RecvTensor wait on
// computation, so they carry the step's deadline if any, and a silent peer is found by the
// master's liveness probes instead (distributed/master/worker_liveness.h). The in-process Worker
// implements it directly (a worker talking to itself never goes through an RPC) and honours
// cancellation where a call can block; distributed/rpc implements it over gRPC. The synchronous
// helpers wait for the asynchronous call. Implementations are thread-safe.
#pragma once

#include <functional>

#include "weft/core/status.h"
#include "weft/core/tensor.h"
#include "weft/distributed/call_options.h"
#include "weft/worker.pb.h"

namespace weft {

// Starts an asynchronous call (`start` passes it the callback) and waits for its status.
Status WaitForCall(const std::function<void(StatusCallback)>& start);

// What RecvTensor delivers: the value itself rather than its wire form, so that neither side copies
// a large tensor more than the transport must.
struct TensorResponse {
  Tensor tensor;
  bool is_dead = false;
};

class WorkerInterface {
 public:
  virtual ~WorkerInterface() = default;

  virtual void GetStatusAsync(CallOptions* options, const proto::GetStatusRequest* request,
                              proto::GetStatusResponse* response, StatusCallback done) = 0;
  virtual void CreateWorkerSessionAsync(CallOptions* options,
                                        const proto::CreateWorkerSessionRequest* request,
                                        proto::CreateWorkerSessionResponse* response,
                                        StatusCallback done) = 0;
  virtual void DeleteWorkerSessionAsync(CallOptions* options,
                                        const proto::DeleteWorkerSessionRequest* request,
                                        proto::DeleteWorkerSessionResponse* response,
                                        StatusCallback done) = 0;
  virtual void RegisterGraphAsync(CallOptions* options, const proto::RegisterGraphRequest* request,
                                  proto::RegisterGraphResponse* response, StatusCallback done) = 0;
  virtual void DeregisterGraphAsync(CallOptions* options,
                                    const proto::DeregisterGraphRequest* request,
                                    proto::DeregisterGraphResponse* response,
                                    StatusCallback done) = 0;
  // `options` may be cancelled while the step runs: the worker then aborts the step.
  virtual void RunGraphAsync(CallOptions* options, const proto::RunGraphRequest* request,
                             proto::RunGraphResponse* response, StatusCallback done) = 0;
  virtual void CleanupGraphAsync(CallOptions* options, const proto::CleanupGraphRequest* request,
                                 proto::CleanupGraphResponse* response, StatusCallback done) = 0;
  // Waits for the step's _Send of the key on this worker and delivers its value.
  virtual void RecvTensorAsync(CallOptions* options, const proto::RecvTensorRequest* request,
                               TensorResponse* response, StatusCallback done) = 0;
  // Joins a device to a collective group led by this worker; answers once the group is complete
  // (distributed/collective/collective_group_leader.h). Cancelling `options` withdraws the device.
  // Workers that lead no groups (test fakes) keep this default: Unimplemented.
  virtual void CompleteGroupAsync(CallOptions* options, const proto::CompleteGroupRequest* request,
                                  proto::CompleteGroupResponse* response, StatusCallback done);

  // Blocking forms, for callers that own a thread (the master's set-up, tests).
  Status GetStatus(CallOptions* options, const proto::GetStatusRequest& request,
                   proto::GetStatusResponse* response);
  Status CreateWorkerSession(CallOptions* options, const proto::CreateWorkerSessionRequest& request,
                             proto::CreateWorkerSessionResponse* response);
  Status DeleteWorkerSession(CallOptions* options, const proto::DeleteWorkerSessionRequest& request,
                             proto::DeleteWorkerSessionResponse* response);
  Status RegisterGraph(CallOptions* options, const proto::RegisterGraphRequest& request,
                       proto::RegisterGraphResponse* response);
  Status DeregisterGraph(CallOptions* options, const proto::DeregisterGraphRequest& request,
                         proto::DeregisterGraphResponse* response);
  Status RunGraph(CallOptions* options, const proto::RunGraphRequest& request,
                  proto::RunGraphResponse* response);
  Status CleanupGraph(CallOptions* options, const proto::CleanupGraphRequest& request,
                      proto::CleanupGraphResponse* response);
  Status RecvTensor(CallOptions* options, const proto::RecvTensorRequest& request,
                    TensorResponse* response);
  Status CompleteGroup(CallOptions* options, const proto::CompleteGroupRequest& request,
                       proto::CompleteGroupResponse* response);
};

}  // namespace weft
