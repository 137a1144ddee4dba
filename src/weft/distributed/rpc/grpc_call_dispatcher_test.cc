#include "weft/distributed/rpc/grpc_call_dispatcher.h"

#include <gtest/gtest.h>

#include "weft/distributed/rpc/testing/rpc_test_util.h"

namespace weft {
namespace {

using testing::RawUnaryCall;
using testing::TestServer;

class GrpcCallDispatcherTest : public ::testing::Test {
 protected:
  GrpcCallDispatcherTest() : pool_("dispatcher_test", 2) {
    // Echo: the response's task name is the request's session handle; "fail" fails.
    RegisterTypedMethod<proto::DeleteWorkerSessionRequest, proto::GetStatusResponse>(
        &dispatcher_, "test.Service", "Echo", nullptr,
        [](CallOptions*, const proto::DeleteWorkerSessionRequest* request,
           proto::GetStatusResponse* response, StatusCallback done) {
          if (request->session_handle() == "fail") {
            done(FailedPrecondition("session handle fail refused"));
            return;
          }
          response->set_task_name(request->session_handle());
          done(Status::OK());
        });
    RegisterTypedMethod<proto::DeleteWorkerSessionRequest, proto::GetStatusResponse>(
        &dispatcher_, "test.Service", "Pooled", &pool_,
        [](CallOptions*, const proto::DeleteWorkerSessionRequest* request,
           proto::GetStatusResponse* response, StatusCallback done) {
          response->set_task_name("pooled " + request->session_handle());
          done(Status::OK());
        });
    server_ = std::make_unique<TestServer>(&dispatcher_);
    channel_ = NewWeftChannel(server_->address(), TransportSecurity());
  }

  ThreadPool pool_;
  GrpcCallDispatcher dispatcher_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(GrpcCallDispatcherTest, DispatchesByMethodPath) {
  ASSERT_TRUE(server_->ok());
  EXPECT_TRUE(dispatcher_.HasMethod("/test.Service/Echo"));
  proto::DeleteWorkerSessionRequest request;
  request.set_session_handle("hello");
  std::string response_bytes;
  grpc::Status status =
      RawUnaryCall(channel_, "/test.Service/Echo", request.SerializeAsString(), &response_bytes);
  ASSERT_TRUE(status.ok()) << status.error_message();
  proto::GetStatusResponse response;
  ASSERT_TRUE(response.ParseFromString(response_bytes));
  EXPECT_EQ(response.task_name(), "hello");

  status =
      RawUnaryCall(channel_, "/test.Service/Pooled", request.SerializeAsString(), &response_bytes);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(response.ParseFromString(response_bytes));
  EXPECT_EQ(response.task_name(), "pooled hello");
}

TEST_F(GrpcCallDispatcherTest, HandlerErrorKeepsCodeAndMessage) {
  proto::DeleteWorkerSessionRequest request;
  request.set_session_handle("fail");
  grpc::Status status = RawUnaryCall(channel_, "/test.Service/Echo", request.SerializeAsString());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(), "session handle fail refused");
}

TEST_F(GrpcCallDispatcherTest, UnknownMethodIsUnimplementedNamingIt) {
  grpc::Status status = RawUnaryCall(channel_, "/test.Service/Nope", "");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(status.error_message().find("/test.Service/Nope"), std::string::npos);
}

TEST_F(GrpcCallDispatcherTest, MalformedRequestIsInvalidArgumentAndServerSurvives) {
  for (const std::string& bad : {std::string("\xff\xff\xff"), std::string("\x0a\x10"
                                                                          "ab",
                                                                          4)}) {
    for (const char* method : {"/test.Service/Echo", "/test.Service/Pooled"}) {
      grpc::Status status = RawUnaryCall(channel_, method, bad);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
      EXPECT_EQ(status.error_message().rfind("malformed ", 0), 0u) << status.error_message();
    }
  }
  proto::DeleteWorkerSessionRequest request;
  request.set_session_handle("still here");
  EXPECT_TRUE(RawUnaryCall(channel_, "/test.Service/Echo", request.SerializeAsString()).ok());
}

TEST_F(GrpcCallDispatcherTest, ManyConcurrentCalls) {
  constexpr int kCalls = 64;
  grpc::GenericStub stub(channel_);
  struct Pending {
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
    Notification finished;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Pending>> calls;
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<Pending>();
    proto::DeleteWorkerSessionRequest request;
    request.set_session_handle("call " + std::to_string(i));
    call->request = SerializeToByteBuffer(request).value();
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    Pending* raw = call.get();
    stub.UnaryCall(&raw->context, "/test.Service/Echo", grpc::StubOptions(), &raw->request,
                   &raw->response, [raw](grpc::Status status) {
                     raw->status = status;
                     raw->finished.Notify();
                   });
    calls.push_back(std::move(call));
  }
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls[i]->finished.WaitForNotificationWithTimeout(std::chrono::seconds(15)));
    ASSERT_TRUE(calls[i]->status.ok());
    proto::GetStatusResponse response;
    ASSERT_TRUE(ParseFromByteBuffer(calls[i]->response, &response).ok());
    EXPECT_EQ(response.task_name(), "call " + std::to_string(i));
  }
}

}  // namespace
}  // namespace weft
