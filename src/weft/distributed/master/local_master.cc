#include "weft/distributed/master/local_master.h"

#include <chrono>
#include <memory>

#include "weft/core/mutex.h"
#include "weft/distributed/worker/worker_interface.h"

namespace weft {
namespace {

// One call of the set-up kind on its own copies of request and response, shared with the Master's
// callback: a caller that stops waiting at its deadline leaves nothing the Master could still
// write into.
template <typename Request, typename Response>
struct OwnedCall {
  Request request;
  Response response;
  Mutex mu;
  CondVar changed;
  bool finished WEFT_GUARDED_BY(mu) = false;
  bool cancelled WEFT_GUARDED_BY(mu) = false;
  Status status WEFT_GUARDED_BY(mu);
};

// Runs start(request, response, done) and waits for it, at most until the deadline of `options`
// or its cancellation (DeadlineExceeded or Cancelled naming `method`).
template <typename Request, typename Response, typename Start>
Status CallWithDeadline(const char* method, CallOptions* options, const Request& request,
                        Response* response, Start start) {
  if (options == nullptr) {
    return WaitForCall([&](StatusCallback done) { start(&request, response, std::move(done)); });
  }
  auto call = std::make_shared<OwnedCall<Request, Response>>();
  call->request = request;
  start(&call->request, &call->response, [call](const Status& status) {
    MutexLock lock(call->mu);
    call->status = status;
    call->finished = true;
    call->changed.NotifyAll();
  });
  options->SetCancelCallback([call] {
    MutexLock lock(call->mu);
    call->cancelled = true;
    call->changed.NotifyAll();
  });
  const int64_t timeout_ms = options->timeout_ms();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  Status status;
  {
    MutexLock lock(call->mu);
    while (!call->finished && !call->cancelled) {
      if (timeout_ms <= 0) {
        call->changed.Wait(lock);
      } else if (!call->changed.WaitUntil(lock, deadline)) {
        break;
      }
    }
    if (call->finished) {
      status = call->status;
      *response = std::move(call->response);
    } else if (call->cancelled) {
      status = Cancelled(method, " to the in-process master was cancelled");
    } else {
      status = DeadlineExceeded(method, " to the in-process master did not finish within ",
                                timeout_ms, " ms");
    }
  }
  options->ClearCancelCallback();
  return status;
}

class LocalMaster final : public MasterInterface {
 public:
  explicit LocalMaster(Master* master) : master_(master) {}

  Status CreateSession(CallOptions* options, const proto::CreateSessionRequest& request,
                       proto::CreateSessionResponse* response) override {
    return CallWithDeadline("CreateSession", options, request, response,
                            [this](auto* req, auto* resp, StatusCallback done) {
                              master_->CreateSessionAsync(req, resp, std::move(done));
                            });
  }
  Status ExtendSession(CallOptions* options, const proto::ExtendSessionRequest& request,
                       proto::ExtendSessionResponse* response) override {
    return CallWithDeadline("ExtendSession", options, request, response,
                            [this](auto* req, auto* resp, StatusCallback done) {
                              master_->ExtendSessionAsync(req, resp, std::move(done));
                            });
  }
  // The Master itself honours the step's deadline and cancellation (and answers then), so the
  // step's tensors need no copy.
  Status RunStep(CallOptions* options, const proto::RunStepRequest& request,
                 proto::RunStepResponse* response) override {
    return WaitForCall(
        [&](StatusCallback done) { master_->RunStepAsync(options, &request, response, done); });
  }
  Status CloseSession(CallOptions* options, const proto::CloseSessionRequest& request,
                      proto::CloseSessionResponse* response) override {
    return CallWithDeadline("CloseSession", options, request, response,
                            [this](auto* req, auto* resp, StatusCallback done) {
                              master_->CloseSessionAsync(req, resp, std::move(done));
                            });
  }
  Status ListDevices(CallOptions* options, const proto::ListDevicesRequest& request,
                     proto::ListDevicesResponse* response) override {
    return CallWithDeadline("ListDevices", options, request, response,
                            [this](auto* req, auto* resp, StatusCallback done) {
                              master_->ListDevicesAsync(req, resp, std::move(done));
                            });
  }
  Status Reset(CallOptions* options, const proto::ResetRequest& request,
               proto::ResetResponse* response) override {
    return CallWithDeadline("Reset", options, request, response,
                            [this](auto* req, auto* resp, StatusCallback done) {
                              master_->ResetAsync(req, resp, std::move(done));
                            });
  }

 private:
  Master* const master_;
};

}  // namespace

std::unique_ptr<MasterInterface> NewLocalMaster(Master* master) {
  return std::make_unique<LocalMaster>(master);
}

}  // namespace weft
