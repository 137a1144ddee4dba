#include "weft/distributed/local_master.h"

#include "weft/distributed/worker_interface.h"

namespace weft {
namespace {

class LocalMaster final : public MasterInterface {
 public:
  explicit LocalMaster(Master* master) : master_(master) {}

  Status CreateSession(CallOptions* /*options*/, const proto::CreateSessionRequest& request,
                       proto::CreateSessionResponse* response) override {
    return WaitForCall(
        [&](StatusCallback done) { master_->CreateSession(&request, response, done); });
  }
  Status ExtendSession(CallOptions* /*options*/, const proto::ExtendSessionRequest& request,
                       proto::ExtendSessionResponse* response) override {
    return WaitForCall(
        [&](StatusCallback done) { master_->ExtendSession(&request, response, done); });
  }
  Status RunStep(CallOptions* options, const proto::RunStepRequest& request,
                 proto::RunStepResponse* response) override {
    return WaitForCall(
        [&](StatusCallback done) { master_->RunStep(options, &request, response, done); });
  }
  Status CloseSession(CallOptions* /*options*/, const proto::CloseSessionRequest& request,
                      proto::CloseSessionResponse* response) override {
    return WaitForCall(
        [&](StatusCallback done) { master_->CloseSession(&request, response, done); });
  }
  Status ListDevices(CallOptions* /*options*/, const proto::ListDevicesRequest& request,
                     proto::ListDevicesResponse* response) override {
    return WaitForCall(
        [&](StatusCallback done) { master_->ListDevices(&request, response, done); });
  }
  Status Reset(CallOptions* /*options*/, const proto::ResetRequest& request,
               proto::ResetResponse* response) override {
    return WaitForCall([&](StatusCallback done) { master_->Reset(&request, response, done); });
  }

 private:
  Master* const master_;
};

}  // namespace

std::unique_ptr<MasterInterface> NewLocalMaster(Master* master) {
  return std::make_unique<LocalMaster>(master);
}

}  // namespace weft
