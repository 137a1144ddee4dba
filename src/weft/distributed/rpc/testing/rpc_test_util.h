// Test helpers for distributed/rpc: a fake WorkerInterface whose answers are easy to check, an
// in-process gRPC server on 127.0.0.1 hosting a dispatcher, and a blocking generic unary call for
// sending raw bytes. Only for tests.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <grpcpp/client_context.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include "weft/core/mutex.h"
#include "weft/core/notification.h"
#include "weft/distributed/rpc/bulk_transfer.h"
#include "weft/distributed/rpc/grpc_call_dispatcher.h"
#include "weft/distributed/rpc/grpc_util.h"
#include "weft/distributed/rpc/grpc_worker_service.h"
#include "weft/distributed/worker/worker_interface.h"
#include "weft/framework/tensor_proto_util.h"

namespace weft::testing {

// Answers from its own state; the session handle "bad" fails every method that takes one. RunGraph
// echoes its feeds as fetches; graph handle "huge" adds a fetch too large for one message.
class FakeWorker final : public WorkerInterface {
 public:
  void GetStatusAsync(CallOptions*, const proto::GetStatusRequest*,
                      proto::GetStatusResponse* response, StatusCallback done) override {
    response->set_task_name("/job:worker/replica:0/task:7");
    response->add_device_attributes()->set_name("/job:worker/replica:0/task:7/device:CPU:0");
    done(Status::OK());
  }
  void CreateWorkerSessionAsync(CallOptions*, const proto::CreateWorkerSessionRequest* request,
                                proto::CreateWorkerSessionResponse*, StatusCallback done) override {
    done(CheckHandle(request->session_handle()));
  }
  void DeleteWorkerSessionAsync(CallOptions*, const proto::DeleteWorkerSessionRequest* request,
                                proto::DeleteWorkerSessionResponse*, StatusCallback done) override {
    done(CheckHandle(request->session_handle()));
  }
  void RegisterGraphAsync(CallOptions*, const proto::RegisterGraphRequest* request,
                          proto::RegisterGraphResponse* response, StatusCallback done) override {
    response->set_graph_handle("graph-of-" + request->session_handle());
    done(CheckHandle(request->session_handle()));
  }
  void DeregisterGraphAsync(CallOptions*, const proto::DeregisterGraphRequest* request,
                            proto::DeregisterGraphResponse*, StatusCallback done) override {
    done(CheckHandle(request->session_handle()));
  }
  void RunGraphAsync(CallOptions*, const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response, StatusCallback done) override {
    for (const proto::NamedTensorProto& sent : request->send()) {
      proto::NamedTensorProto* recv = response->add_recv();
      recv->set_name(sent.name() + ":echo");
      *recv->mutable_tensor() = sent.tensor();
    }
    if (request->graph_handle() == "bad") {
      done(Aborted("step ", request->step_id(), ": graph handle bad is gone"));
      return;
    }
    if (request->graph_handle() == "huge") {  // a fetch over one message's 2 GB limit
      proto::NamedTensorProto* recv = response->add_recv();
      recv->set_name("huge:0");
      recv->mutable_tensor()->mutable_tensor_content()->resize(kMaxMessageBytes + 1);
    }
    done(CheckHandle(request->session_handle()));
  }
  void CleanupGraphAsync(CallOptions*, const proto::CleanupGraphRequest* request,
                         proto::CleanupGraphResponse*, StatusCallback done) override {
    MutexLock lock(mu_);
    last_cleanup_step_ = request->step_id();
    done(Status::OK());
  }
  // "block" waits until the call is cancelled (and notifies recv_blocked); "dead" is a dead value;
  // other keys must have been Put, else NotFound naming the key.
  void RecvTensorAsync(CallOptions* options, const proto::RecvTensorRequest* request,
                       TensorResponse* response, StatusCallback done) override {
    if (request->rendezvous_key() == "block") {
      options->SetCancelCallback([done] { done(Cancelled("RecvTensor of block cancelled")); });
      recv_blocked.Notify();
      return;
    }
    if (request->rendezvous_key() == "dead") {
      response->is_dead = true;
      done(Status::OK());
      return;
    }
    MutexLock lock(mu_);
    auto it = values_.find(request->rendezvous_key());
    if (it == values_.end()) {
      done(NotFound("rendezvous key ", request->rendezvous_key(), " not found in step ",
                    request->step_id()));
      return;
    }
    response->tensor = it->second;
    done(Status::OK());
  }

  void Put(const std::string& key, const Tensor& value) {
    MutexLock lock(mu_);
    values_[key] = value;
  }
  Notification recv_blocked;  // a "block" RecvTensor has arrived

  int64_t last_cleanup_step() {
    MutexLock lock(mu_);
    return last_cleanup_step_;
  }

 private:
  static Status CheckHandle(const std::string& handle) {
    if (handle == "bad") return NotFound("session handle bad is not known");
    return Status::OK();
  }

  Mutex mu_;
  std::map<std::string, Tensor> values_ WEFT_GUARDED_BY(mu_);
  int64_t last_cleanup_step_ WEFT_GUARDED_BY(mu_) = -1;
};

// A gRPC server on 127.0.0.1:<ephemeral> serving `dispatcher`.
class TestServer {
 public:
  explicit TestServer(GrpcCallDispatcher* dispatcher) {
    RetainCallbackCompletionQueue();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.SetMaxReceiveMessageSize(-1);
    builder.SetMaxSendMessageSize(-1);
    builder.RegisterCallbackGenericService(dispatcher);
    server_ = builder.BuildAndStart();
  }
  ~TestServer() { Stop(); }
  bool ok() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void Stop() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
    server_.reset();
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A FakeWorker served by GrpcWorkerService with a bulk server.
struct WorkerFixture {
  WorkerFixture() {
    BulkTransferServer::Options options;
    bulk_server = std::move(BulkTransferServer::Create(options)).value();
    service = std::make_unique<GrpcWorkerService>(&worker, bulk_server.get(), &dispatcher);
    server = std::make_unique<TestServer>(&dispatcher);
  }
  ~WorkerFixture() {
    server.reset();
    service.reset();
    bulk_server.reset();
  }
  FakeWorker worker;
  GrpcCallDispatcher dispatcher;
  std::unique_ptr<BulkTransferServer> bulk_server;
  std::unique_ptr<GrpcWorkerService> service;
  std::unique_ptr<TestServer> server;
};

// Sends `request` bytes to `method` and waits (at most 10 s) for the answer.
inline grpc::Status RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel,
                                 const std::string& method, const std::string& request,
                                 std::string* response = nullptr) {
  RetainCallbackCompletionQueue();
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  Notification finished;
  grpc::Status result;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request_buffer, &response_buffer,
                 [&](grpc::Status status) {
                   result = status;
                   finished.Notify();
                 });
  if (!finished.WaitForNotificationWithTimeout(std::chrono::seconds(15))) {
    context.TryCancel();
    finished.WaitForNotification();
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "test call hung");
  }
  if (response != nullptr) *response = ByteBufferToString(response_buffer);
  return result;
}

// A tensor of `num_bytes` bytes (uint8) with a pattern that catches misplaced bytes.
inline Tensor PatternTensor(int64_t num_bytes, uint8_t seed) {
  Tensor tensor(DataType::kUInt8, TensorShape({num_bytes}));
  auto* bytes = static_cast<uint8_t*>(tensor.raw_data());
  for (int64_t i = 0; i < num_bytes; ++i) {
    bytes[i] = static_cast<uint8_t>((i * 131 + (i >> 8) * 7 + seed) & 0xff);
  }
  return tensor;
}

inline bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.TotalBytes() == b.TotalBytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

}  // namespace weft::testing
