#include "weft/distributed/rpc/grpc_master_service.h"

#include <gtest/gtest.h>

#include "weft/distributed/rpc/grpc_remote_master.h"
#include "weft/distributed/rpc/testing/rpc_test_util.h"

namespace weft {
namespace {

// The Master's asynchronous surface, answering from the request alone. RunStep with the fetch
// "block" waits until the call is cancelled.
class FakeMaster {
 public:
  void CreateSessionAsync(const proto::CreateSessionRequest* request,
                          proto::CreateSessionResponse* response, StatusCallback done) {
    response->set_session_handle("session-" + std::to_string(request->graph_def().node_size()));
    response->set_graph_version(1);
    done(Status::OK());
  }
  void ExtendSessionAsync(const proto::ExtendSessionRequest* request,
                          proto::ExtendSessionResponse* response, StatusCallback done) {
    if (request->current_graph_version() != 1) {
      done(FailedPrecondition("session handle ", request->session_handle(), " is at version 1"));
      return;
    }
    response->set_new_graph_version(2);
    done(Status::OK());
  }
  void RunStepAsync(CallOptions* options, const proto::RunStepRequest* request,
                    proto::RunStepResponse* response, StatusCallback done) {
    if (request->fetch_size() == 1 && request->fetch(0) == "block") {
      options->SetCancelCallback([done] { done(Cancelled("step cancelled")); });
      blocked.Notify();
      return;
    }
    for (const std::string& fetch : request->fetch()) response->add_tensor()->set_name(fetch);
    done(Status::OK());
  }
  void CloseSessionAsync(const proto::CloseSessionRequest* request, proto::CloseSessionResponse*,
                         StatusCallback done) {
    done(NotFound("session handle ", request->session_handle(), " not found"));
  }
  void ListDevicesAsync(const proto::ListDevicesRequest*, proto::ListDevicesResponse* response,
                        StatusCallback done) {
    response->add_local_device()->set_name("/job:worker/replica:0/task:0/device:CPU:0");
    done(Status::OK());
  }
  void ResetAsync(const proto::ResetRequest*, proto::ResetResponse*, StatusCallback done) {
    done(Status::OK());
  }

  Notification blocked;  // a "block" RunStep has arrived
};

class GrpcMasterServiceTest : public ::testing::Test {
 protected:
  GrpcMasterServiceTest() {
    RegisterMasterMethods(&dispatcher_, &master_);
    server_ = std::make_unique<testing::TestServer>(&dispatcher_);
    remote_ = NewGrpcRemoteMaster(server_->address(), TransportSecurity());
    options_.set_timeout_ms(10000);
  }

  FakeMaster master_;
  GrpcCallDispatcher dispatcher_;
  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<MasterInterface> remote_;
  CallOptions options_;
};

TEST_F(GrpcMasterServiceTest, EveryMethodRoundTrips) {
  proto::CreateSessionRequest create;
  create.mutable_graph_def()->add_node();
  proto::CreateSessionResponse created;
  ASSERT_TRUE(remote_->CreateSession(&options_, create, &created).ok());
  EXPECT_EQ(created.session_handle(), "session-1");

  proto::ExtendSessionRequest extend;
  extend.set_session_handle("session-1");
  extend.set_current_graph_version(1);
  proto::ExtendSessionResponse extended;
  ASSERT_TRUE(remote_->ExtendSession(&options_, extend, &extended).ok());
  EXPECT_EQ(extended.new_graph_version(), 2);
  extend.set_current_graph_version(5);
  Status status = remote_->ExtendSession(&options_, extend, &extended);
  EXPECT_EQ(status.code(), Code::kFailedPrecondition);
  EXPECT_NE(status.message().find("session handle session-1 is at version 1"), std::string::npos);

  proto::RunStepRequest run;
  run.add_fetch("y:0");
  proto::RunStepResponse ran;
  ASSERT_TRUE(remote_->RunStep(&options_, run, &ran).ok());
  ASSERT_EQ(ran.tensor_size(), 1);
  EXPECT_EQ(ran.tensor(0).name(), "y:0");

  proto::CloseSessionRequest close;
  close.set_session_handle("gone");
  proto::CloseSessionResponse closed;
  status = remote_->CloseSession(nullptr, close, &closed);
  EXPECT_EQ(status.code(), Code::kNotFound);
  EXPECT_NE(status.message().find("CloseSession to master at " + server_->address() +
                                  ": session handle gone not found"),
            std::string::npos)
      << status;

  proto::ListDevicesResponse devices;
  ASSERT_TRUE(remote_->ListDevices(&options_, proto::ListDevicesRequest(), &devices).ok());
  EXPECT_EQ(devices.local_device_size(), 1);
  proto::ResetResponse reset;
  EXPECT_TRUE(remote_->Reset(&options_, proto::ResetRequest(), &reset).ok());
}

TEST_F(GrpcMasterServiceTest, CancelReachesTheMaster) {
  CallOptions options;
  options.set_timeout_ms(10000);
  proto::RunStepRequest run;
  run.add_fetch("block");
  proto::RunStepResponse ran;
  Status status;
  std::thread caller([&] { status = remote_->RunStep(&options, run, &ran); });
  ASSERT_TRUE(master_.blocked.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
  auto start = std::chrono::steady_clock::now();
  options.StartCancel();
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(status.code(), Code::kCancelled) << status;
}

TEST_F(GrpcMasterServiceTest, MalformedRequestsToEveryMethodAreInvalidArgument) {
  auto channel = NewWeftChannel(server_->address(), TransportSecurity());
  for (const char* method :
       {"CreateSession", "ExtendSession", "RunStep", "CloseSession", "ListDevices", "Reset"}) {
    for (const std::string& bad : {std::string("\xff\xff\xff\xff", 4), std::string("\x0a\x10"
                                                                                   "ab",
                                                                                   4)}) {
      grpc::Status status =
          testing::RawUnaryCall(channel, std::string("/weft.proto.MasterService/") + method, bad);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
      EXPECT_NE(status.error_message().find(std::string("malformed ") + method), std::string::npos);
    }
  }
  proto::ResetResponse reset;
  EXPECT_TRUE(remote_->Reset(&options_, proto::ResetRequest(), &reset).ok());
}

}  // namespace
}  // namespace weft
