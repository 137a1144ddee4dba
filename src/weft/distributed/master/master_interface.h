// MasterInterface: the MasterService as a client session calls it. Calls block; `options` (may be
// null) carries a deadline and can cancel a RunStep in flight. distributed/rpc implements it over
// gRPC; the in-process Master can be wrapped directly. Thread-safe.
#pragma once

#include "weft/core/status.h"
#include "weft/distributed/call_options.h"
#include "weft/master.pb.h"

namespace weft {

class MasterInterface {
 public:
  virtual ~MasterInterface() = default;
  virtual Status CreateSession(CallOptions* options, const proto::CreateSessionRequest& request,
                               proto::CreateSessionResponse* response) = 0;
  virtual Status ExtendSession(CallOptions* options, const proto::ExtendSessionRequest& request,
                               proto::ExtendSessionResponse* response) = 0;
  virtual Status RunStep(CallOptions* options, const proto::RunStepRequest& request,
                         proto::RunStepResponse* response) = 0;
  virtual Status CloseSession(CallOptions* options, const proto::CloseSessionRequest& request,
                              proto::CloseSessionResponse* response) = 0;
  virtual Status ListDevices(CallOptions* options, const proto::ListDevicesRequest& request,
                             proto::ListDevicesResponse* response) = 0;
  virtual Status Reset(CallOptions* options, const proto::ResetRequest& request,
                       proto::ResetResponse* response) = 0;
};

}  // namespace weft
