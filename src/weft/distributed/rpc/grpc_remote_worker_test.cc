#include "weft/distributed/rpc/grpc_remote_worker.h"

#include <gtest/gtest.h>

#include "weft/core/tsan_annotations.h"
#include "weft/distributed/rpc/testing/rpc_test_util.h"

namespace weft {
namespace {

using testing::WorkerFixture;

constexpr char kTask[] = "/job:worker/replica:0/task:3";

// A port nobody listens on: bound, then closed.
int UnusedPort() {
  auto server = BulkTransferServer::Create(BulkTransferServer::Options());
  EXPECT_TRUE(server.ok());
  return (*server)->port();
}

TEST(GrpcRemoteWorkerTest, StoppedServerIsUnavailableQuickly) {
  WorkerFixture fixture;
  const std::string address = fixture.server->address();
  GrpcRemoteWorker remote(kTask, address, NewWeftChannel(address, TransportSecurity()), nullptr,
                          "");
  CallOptions options;
  options.set_timeout_ms(10000);
  proto::GetStatusResponse response;
  ASSERT_TRUE(remote.GetStatus(&options, proto::GetStatusRequest(), &response).ok());
  fixture.server->Stop();

  auto start = std::chrono::steady_clock::now();
  Status status = remote.GetStatus(&options, proto::GetStatusRequest(), &response);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(status.code(), Code::kUnavailable) << status;
  EXPECT_NE(status.message().find(StrCat("GetStatus to ", kTask, " at ", address)),
            std::string::npos)
      << status;
}

TEST(GrpcRemoteWorkerTest, WaitForReadyHonoursTheDeadline) {
  const std::string address = "127.0.0.1:" + std::to_string(UnusedPort());
  GrpcRemoteWorker remote(kTask, address, NewWeftChannel(address, TransportSecurity()), nullptr,
                          "");
  CallOptions options;
  options.set_timeout_ms(300);
  options.set_wait_for_ready(true);
  proto::RunGraphResponse response;
  auto start = std::chrono::steady_clock::now();
  Status status = remote.RunGraph(&options, proto::RunGraphRequest(), &response);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::milliseconds(1500));
  EXPECT_GE(elapsed, std::chrono::milliseconds(250));
  EXPECT_TRUE(status.code() == Code::kDeadlineExceeded || status.code() == Code::kUnavailable)
      << status;
  EXPECT_NE(status.message().find(address), std::string::npos) << status;
}

// Messages over protobuf's 2 GB limit fail as errors naming the tensor, in both directions.
TEST(GrpcRemoteWorkerTest, TensorsOverTheMessageLimitAreErrorsNamingThem) {
#if defined(WEFT_TSAN_ENABLED)
  // ThreadSanitizer's shadow of the two 2 GB buffers would take most of the machine's memory.
  GTEST_SKIP() << "needs 4 GB of plain memory";
#endif
  WorkerFixture fixture;
  const std::string address = fixture.server->address();
  GrpcRemoteWorker remote(kTask, address, NewWeftChannel(address, TransportSecurity()), nullptr,
                          "");
  CallOptions options;
  options.set_timeout_ms(60000);
  proto::RunGraphResponse response;
  {
    proto::RunGraphRequest request;
    request.set_session_handle("s");
    proto::NamedTensorProto* feed = request.add_send();
    feed->set_name("big_feed:0");
    feed->mutable_tensor()->mutable_tensor_content()->resize(kMaxMessageBytes);
    Status status = remote.RunGraph(&options, request, &response);
    EXPECT_TRUE(IsResourceExhausted(status)) << status;
    EXPECT_NE(status.message().find("feed 'big_feed:0' ("), std::string::npos) << status;
    EXPECT_NE(status.message().find("RunGraph to " + std::string(kTask)), std::string::npos)
        << status;
  }
  proto::RunGraphRequest request;
  request.set_session_handle("s");
  request.set_graph_handle("huge");
  Status status = remote.RunGraph(&options, request, &response);
  EXPECT_TRUE(IsResourceExhausted(status)) << status;
  EXPECT_NE(status.message().find("fetch 'huge:0' ("), std::string::npos) << status;
  // The server goes on serving.
  proto::GetStatusResponse status_response;
  EXPECT_TRUE(remote.GetStatus(&options, proto::GetStatusRequest(), &status_response).ok());
}

TEST(GrpcRemoteWorkerTest, CancelledBeforeTheCallFailsAtOnce) {
  WorkerFixture fixture;
  const std::string address = fixture.server->address();
  GrpcRemoteWorker remote(kTask, address, NewWeftChannel(address, TransportSecurity()), nullptr,
                          "");
  CallOptions options;
  options.StartCancel();
  proto::RunGraphResponse response;
  Status status = remote.RunGraph(&options, proto::RunGraphRequest(), &response);
  EXPECT_EQ(status.code(), Code::kCancelled) << status;
}

TEST(GrpcRemoteWorkerTest, ReachesARestartedServerAgain) {
  // Same port after a restart: the short reconnect backoff makes the second call succeed soon.
  auto fixture = std::make_unique<WorkerFixture>();
  const int port = fixture->server->port();
  const std::string address = fixture->server->address();
  GrpcRemoteWorker remote(kTask, address, NewWeftChannel(address, TransportSecurity()), nullptr,
                          "");
  CallOptions options;
  options.set_timeout_ms(5000);
  proto::GetStatusResponse response;
  ASSERT_TRUE(remote.GetStatus(&options, proto::GetStatusRequest(), &response).ok());
  fixture.reset();

  testing::FakeWorker worker;
  GrpcCallDispatcher dispatcher;
  GrpcWorkerService service(&worker, nullptr, &dispatcher);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  builder.RegisterCallbackGenericService(&dispatcher);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr) << "port " << port << " could not be bound again";
  options.set_wait_for_ready(true);
  auto start = std::chrono::steady_clock::now();
  Status status = remote.GetStatus(&options, proto::GetStatusRequest(), &response);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server->Wait();
}

}  // namespace
}  // namespace weft
