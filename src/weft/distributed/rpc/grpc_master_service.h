// GrpcMasterService: serves the six MasterService methods of a server by forwarding them to the
// in-process Master. RegisterMasterMethods does the forwarding for any type with the Master's
// asynchronous methods (tests use a fake). Thread-safe; the master and dispatcher must outlive it,
// and the gRPC server must be shut down before it is destroyed.
#pragma once

#include <utility>

#include "weft/distributed/rpc/grpc_call_dispatcher.h"
#include "weft/master.pb.h"

namespace weft {

class Master;

inline constexpr char kMasterServiceName[] = "weft.proto.MasterService";

// The Master schedules its own work, so the methods run inline on the gRPC thread.
template <typename MasterType>
void RegisterMasterMethods(GrpcCallDispatcher* dispatcher, MasterType* master) {
  RegisterTypedMethod<proto::CreateSessionRequest, proto::CreateSessionResponse>(
      dispatcher, kMasterServiceName, "CreateSession", nullptr,
      [master](CallOptions*, const proto::CreateSessionRequest* request,
               proto::CreateSessionResponse* response, StatusCallback done) {
        master->CreateSessionAsync(request, response, std::move(done));
      });
  RegisterTypedMethod<proto::ExtendSessionRequest, proto::ExtendSessionResponse>(
      dispatcher, kMasterServiceName, "ExtendSession", nullptr,
      [master](CallOptions*, const proto::ExtendSessionRequest* request,
               proto::ExtendSessionResponse* response, StatusCallback done) {
        master->ExtendSessionAsync(request, response, std::move(done));
      });
  // The call's CallOptions is cancelled when the client cancels or goes away.
  RegisterTypedMethod<proto::RunStepRequest, proto::RunStepResponse>(
      dispatcher, kMasterServiceName, "RunStep", nullptr,
      [master](CallOptions* options, const proto::RunStepRequest* request,
               proto::RunStepResponse* response, StatusCallback done) {
        master->RunStepAsync(options, request, response, std::move(done));
      });
  RegisterTypedMethod<proto::CloseSessionRequest, proto::CloseSessionResponse>(
      dispatcher, kMasterServiceName, "CloseSession", nullptr,
      [master](CallOptions*, const proto::CloseSessionRequest* request,
               proto::CloseSessionResponse* response, StatusCallback done) {
        master->CloseSessionAsync(request, response, std::move(done));
      });
  RegisterTypedMethod<proto::ListDevicesRequest, proto::ListDevicesResponse>(
      dispatcher, kMasterServiceName, "ListDevices", nullptr,
      [master](CallOptions*, const proto::ListDevicesRequest* request,
               proto::ListDevicesResponse* response, StatusCallback done) {
        master->ListDevicesAsync(request, response, std::move(done));
      });
  RegisterTypedMethod<proto::ResetRequest, proto::ResetResponse>(
      dispatcher, kMasterServiceName, "Reset", nullptr,
      [master](CallOptions*, const proto::ResetRequest* request, proto::ResetResponse* response,
               StatusCallback done) { master->ResetAsync(request, response, std::move(done)); });
}

class GrpcMasterService {
 public:
  GrpcMasterService(Master* master, GrpcCallDispatcher* dispatcher);

 private:
  Master* const master_;
};

}  // namespace weft
