#include "weft/distributed/master/local_master.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
#include "weft/distributed/master/cluster_session.h"
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

namespace {

constexpr char kLocalScheme[] = "local://";

struct LocalMasters {
  Mutex mu;
  int64_t next WEFT_GUARDED_BY(mu) = 0;
  std::map<std::string, Master*> by_target WEFT_GUARDED_BY(mu);
};

LocalMasters& Registry() {
  static auto* registry = new LocalMasters();
  return *registry;
}

}  // namespace

std::string RegisterLocalMaster(const std::string& task_name, Master* master) {
  static std::once_flag factory_registered;
  std::call_once(factory_registered, [] {
    RegisterSessionFactory(kLocalScheme,
                           [](const SessionOptions& options) -> StatusOr<std::unique_ptr<Session>> {
                             Master* found = nullptr;
                             {
                               LocalMasters& registry = Registry();
                               MutexLock lock(registry.mu);
                               auto it = registry.by_target.find(options.target);
                               if (it != registry.by_target.end()) found = it->second;
                             }
                             if (found == nullptr) {
                               return NotFound("no server in this process serves '", options.target,
                                               "' (it has stopped)");
                             }
                             return NewClusterSession(NewLocalMaster(found), options);
                           });
  });
  LocalMasters& registry = Registry();
  MutexLock lock(registry.mu);
  std::string target = StrCat(kLocalScheme, task_name, "#", registry.next++);
  registry.by_target[target] = master;
  return target;
}

void UnregisterLocalMaster(const std::string& target) {
  LocalMasters& registry = Registry();
  MutexLock lock(registry.mu);
  registry.by_target.erase(target);
}

}  // namespace weft
