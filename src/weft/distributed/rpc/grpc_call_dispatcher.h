// GrpcCallDispatcher: the one generic callback service of a server. It reads each call's single
// request message, finds the handler registered for the call's method path
// ("/weft.proto.WorkerService/RunGraph") and sends the handler's response or error. Several
// services (worker, master) register their methods in the same dispatcher, since a gRPC server can
// host only one generic service. With a token, every call must carry it (metadata "weft-token")
// or fails UNAUTHENTICATED before any handler runs. Register every method and set the token before
// the server starts; afterwards the dispatcher is read-only and thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include "weft/core/thread_pool.h"
#include "weft/distributed/call_options.h"
#include "weft/distributed/rpc/grpc_util.h"
#include "weft/distributed/worker/worker_interface.h"

namespace weft {

class GrpcCallDispatcher final : public grpc::CallbackGenericService {
 public:
  using DoneCallback = std::function<void(const grpc::Status&)>;
  // Fills `*response` and then calls `done` exactly once. `options` is cancelled when the client
  // cancels the call or goes away. Runs on a gRPC thread: it must not block.
  using Handler = std::function<void(const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
                                     CallOptions* options, DoneCallback done)>;

  // `path` is the full method path; a second registration of a path replaces the first.
  void RegisterMethod(const std::string& path, Handler handler);
  bool HasMethod(const std::string& path) const { return handlers_.count(path) > 0; }
  // The shared secret every call must present; empty: none.
  void set_token(std::string token) { token_ = std::move(token); }

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override;

 private:
  class Reactor;
  std::map<std::string, Handler> handlers_;
  std::string token_;
};

// Registers `method` of `service` ("weft.proto.WorkerService", "RunGraph") with a typed
// asynchronous function: the request is parsed (malformed bytes fail the call with
// INVALID_ARGUMENT "malformed <Method> request: ...") and the response serialized. `function` runs
// on `pool` when one is given (for methods that may block), else on the gRPC thread.
template <typename Request, typename Response>
void RegisterTypedMethod(
    GrpcCallDispatcher* dispatcher, const std::string& service, const std::string& method,
    ThreadPool* pool,
    std::function<void(CallOptions*, const Request*, Response*, StatusCallback)> function) {
  auto handler = [method, pool, function](const grpc::ByteBuffer& request_bytes,
                                          grpc::ByteBuffer* response_bytes, CallOptions* options,
                                          GrpcCallDispatcher::DoneCallback done) {
    struct Call {
      Request request;
      Response response;
    };
    auto call = std::make_shared<Call>();
    Status parsed = ParseFromByteBuffer(request_bytes, &call->request);
    if (!parsed.ok()) {
      done(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "malformed " + method + " request: " + parsed.message()));
      return;
    }
    auto run = [call, function, options, response_bytes, done = std::move(done)]() {
      function(options, &call->request, &call->response,
               [call, response_bytes, done](const Status& status) {
                 if (!status.ok()) {
                   done(ToGrpcStatus(status));
                   return;
                 }
                 StatusOr<grpc::ByteBuffer> bytes = SerializeToByteBuffer(call->response);
                 if (bytes.ok()) *response_bytes = std::move(*bytes);
                 done(ToGrpcStatus(bytes.status()));
               });
    };
    if (pool != nullptr) {
      pool->Schedule(std::move(run));
    } else {
      run();
    }
  };
  dispatcher->RegisterMethod("/" + service + "/" + method, std::move(handler));
}

}  // namespace weft
