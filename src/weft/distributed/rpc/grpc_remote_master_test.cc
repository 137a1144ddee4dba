#include "weft/distributed/rpc/grpc_remote_master.h"

#include <gtest/gtest.h>

#include "weft/distributed/rpc/testing/rpc_test_util.h"

namespace weft {
namespace {

TEST(GrpcRemoteMasterTest, UnreachableMasterFailsAtTheDeadlineNamingTheAddress) {
  int port = 0;
  {
    auto unused = BulkTransferServer::Create(BulkTransferServer::Options());
    ASSERT_TRUE(unused.ok());
    port = (*unused)->port();
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);
  auto master = NewGrpcRemoteMaster(address, TransportSecurity());
  CallOptions options;
  options.set_timeout_ms(300);
  proto::CreateSessionResponse response;
  auto start = std::chrono::steady_clock::now();
  // CreateSession waits for the master to come up, until its deadline.
  Status status = master->CreateSession(&options, proto::CreateSessionRequest(), &response);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, std::chrono::milliseconds(250));
  EXPECT_LT(elapsed, std::chrono::milliseconds(1500));
  EXPECT_EQ(status.code(), Code::kDeadlineExceeded) << status;
  EXPECT_NE(status.message().find("CreateSession to master at " + address), std::string::npos)
      << status;

  // Other calls fail at once.
  options.set_timeout_ms(5000);
  proto::RunStepResponse ran;
  start = std::chrono::steady_clock::now();
  status = master->RunStep(&options, proto::RunStepRequest(), &ran);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(status.code(), Code::kUnavailable) << status;
}

}  // namespace
}  // namespace weft
