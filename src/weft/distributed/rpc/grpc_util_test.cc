#include "weft/distributed/rpc/grpc_util.h"

#include <gtest/gtest.h>

#include "weft/master.pb.h"
#include "weft/worker.pb.h"

namespace weft {
namespace {

TEST(GrpcUtilTest, StatusCodesKeepTheirNumbers) {
  for (int code = 1; code <= static_cast<int>(Code::kUnauthenticated); ++code) {
    Status status(static_cast<Code>(code), "step 5 failed");
    grpc::Status wire = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(wire.error_message(), "step 5 failed");
    EXPECT_EQ(FromGrpcStatus(wire), status);
  }
  EXPECT_TRUE(ToGrpcStatus(Status::OK()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(GrpcUtilTest, UnknownGrpcCodeBecomesUnknown) {
  grpc::Status odd(static_cast<grpc::StatusCode>(20), "odd");
  EXPECT_EQ(FromGrpcStatus(odd).code(), Code::kUnknown);
}

TEST(GrpcUtilTest, ProtoRoundTripsThroughByteBuffer) {
  proto::RunGraphRequest request;
  request.set_session_handle("session-1");
  request.set_step_id(42);
  request.add_send()->mutable_tensor()->set_tensor_content(std::string(100000, 'x'));
  grpc::ByteBuffer buffer = SerializeToByteBuffer(request).value();
  EXPECT_EQ(buffer.Length(), request.ByteSizeLong());
  EXPECT_EQ(ByteBufferToString(buffer), request.SerializeAsString());
  proto::RunGraphRequest parsed;
  ASSERT_TRUE(ParseFromByteBuffer(buffer, &parsed).ok());
  EXPECT_EQ(parsed.SerializeAsString(), request.SerializeAsString());
  // Parsing leaves the buffer intact.
  EXPECT_EQ(buffer.Length(), request.ByteSizeLong());
}

TEST(GrpcUtilTest, EmptyMessageRoundTrips) {
  grpc::ByteBuffer buffer = SerializeToByteBuffer(proto::GetStatusRequest()).value();
  EXPECT_EQ(buffer.Length(), 0u);
  proto::GetStatusRequest parsed;
  EXPECT_TRUE(ParseFromByteBuffer(buffer, &parsed).ok());
}

TEST(GrpcUtilTest, OversizedMessagesNameTheirLargestTensor) {
  // The real limit is 2 GB; a small one exercises the same check.
  proto::RunStepResponse response;
  auto* small = response.add_tensor();
  small->set_name("small:0");
  small->mutable_tensor()->set_tensor_content(std::string(10, 'x'));
  auto* big = response.add_tensor();
  big->set_name("big:0");
  big->mutable_tensor()->set_tensor_content(std::string(500, 'x'));
  EXPECT_TRUE(CheckMessageSize(response, 1000).ok());
  Status status = CheckMessageSize(response, 400);
  EXPECT_TRUE(IsResourceExhausted(status)) << status;
  EXPECT_NE(status.message().find("fetch 'big:0' (503 bytes) makes a weft.proto.RunStepResponse"),
            std::string::npos)
      << status;
  proto::RunStepRequest request;
  request.add_feed()->set_name("x");
  request.mutable_feed(0)->mutable_tensor()->set_tensor_content(std::string(100, 'x'));
  status = CheckMessageSize(request, 50);
  EXPECT_NE(status.message().find("feed 'x'"), std::string::npos) << status;
  // Messages without tensors name only their type and size.
  proto::ExtendSessionRequest plain;
  plain.set_session_handle(std::string(100, 's'));
  status = CheckMessageSize(plain, 50);
  EXPECT_NE(
      status.message().find("a weft.proto.ExtendSessionRequest of 102 bytes, over the 50-byte"),
      std::string::npos)
      << status;
}

TEST(GrpcUtilTest, GarbageIsInvalidArgumentNamingTypeAndSize) {
  const std::string garbage = "\xff\xff\xff\xff\xff";
  grpc::Slice slice(garbage);
  grpc::ByteBuffer buffer(&slice, 1);
  proto::RunGraphRequest parsed;
  Status status = ParseFromByteBuffer(buffer, &parsed);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("weft.proto.RunGraphRequest"), std::string::npos) << status;
  EXPECT_NE(status.message().find("5 bytes"), std::string::npos) << status;
}

TEST(GrpcUtilTest, TruncatedIsInvalidArgument) {
  proto::RunGraphRequest request;
  request.set_session_handle("a fairly long session handle");
  std::string bytes = request.SerializeAsString();
  bytes.resize(bytes.size() - 3);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer buffer(&slice, 1);
  proto::RunGraphRequest parsed;
  EXPECT_EQ(ParseFromByteBuffer(buffer, &parsed).code(), Code::kInvalidArgument);
}

TEST(GrpcUtilTest, HostOfAddress) {
  EXPECT_EQ(HostOfAddress("127.0.0.1:2222"), "127.0.0.1");
  EXPECT_EQ(HostOfAddress("localhost:1"), "localhost");
  EXPECT_EQ(HostOfAddress("[::1]:2222"), "::1");
  EXPECT_EQ(HostOfAddress("nohost"), "");
}

TEST(GrpcUtilTest, ChannelArgumentsAreUsable) {
  grpc::ChannelArguments args = WeftChannelArguments();
  grpc_channel_args c_args = args.c_channel_args();
  bool saw_max_backoff = false;
  for (size_t i = 0; i < c_args.num_args; ++i) {
    if (std::string(c_args.args[i].key) == GRPC_ARG_MAX_RECONNECT_BACKOFF_MS) {
      saw_max_backoff = true;
      EXPECT_EQ(c_args.args[i].value.integer, 1000);
    }
  }
  EXPECT_TRUE(saw_max_backoff);
  EXPECT_NE(NewWeftChannel("127.0.0.1:1", TransportSecurity()), nullptr);
}

}  // namespace
}  // namespace weft
