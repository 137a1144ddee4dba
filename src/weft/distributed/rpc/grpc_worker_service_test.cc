#include "weft/distributed/rpc/grpc_worker_service.h"

#include <gtest/gtest.h>

#include "weft/distributed/rpc/grpc_remote_worker.h"
#include "weft/distributed/rpc/testing/rpc_test_util.h"

namespace weft {
namespace {

using testing::PatternTensor;
using testing::RawUnaryCall;
using testing::SameBytes;
using testing::WorkerFixture;

constexpr char kTask[] = "/job:worker/replica:0/task:1";

class GrpcWorkerServiceTest : public ::testing::Test {
 protected:
  GrpcWorkerServiceTest()
      : channel_(NewWeftChannel(fixture_.server->address(), TransportSecurity())),
        remote_(kTask, fixture_.server->address(), channel_, std::make_shared<BulkTransferClient>(),
                ""),
        remote_without_bulk_(kTask, fixture_.server->address(), channel_, nullptr, "") {}

  static void SetDeadline(CallOptions* options) { options->set_timeout_ms(20000); }

  WorkerFixture fixture_;
  std::shared_ptr<grpc::Channel> channel_;
  GrpcRemoteWorker remote_;
  GrpcRemoteWorker remote_without_bulk_;
};

TEST_F(GrpcWorkerServiceTest, EveryMethodRoundTrips) {
  ASSERT_TRUE(fixture_.server->ok());
  CallOptions options;
  SetDeadline(&options);
  proto::GetStatusResponse status_response;
  ASSERT_TRUE(remote_.GetStatus(&options, proto::GetStatusRequest(), &status_response).ok());
  EXPECT_EQ(status_response.task_name(), "/job:worker/replica:0/task:7");
  ASSERT_EQ(status_response.device_attributes_size(), 1);

  proto::CreateWorkerSessionRequest create;
  create.set_session_handle("s1");
  proto::CreateWorkerSessionResponse create_response;
  EXPECT_TRUE(remote_.CreateWorkerSession(nullptr, create, &create_response).ok());

  proto::RegisterGraphRequest register_request;
  register_request.set_session_handle("s1");
  proto::RegisterGraphResponse register_response;
  ASSERT_TRUE(remote_.RegisterGraph(nullptr, register_request, &register_response).ok());
  EXPECT_EQ(register_response.graph_handle(), "graph-of-s1");

  proto::RunGraphRequest run;
  run.set_session_handle("s1");
  run.set_graph_handle("graph-of-s1");
  run.set_step_id(3);
  proto::NamedTensorProto* send = run.add_send();
  send->set_name("x");
  *send->mutable_tensor() = ToProto(Tensor::FromVector<float>({1, 2, 3}));
  proto::RunGraphResponse run_response;
  ASSERT_TRUE(remote_.RunGraph(&options, run, &run_response).ok());
  ASSERT_EQ(run_response.recv_size(), 1);
  EXPECT_EQ(run_response.recv(0).name(), "x:echo");
  EXPECT_EQ(run_response.recv(0).tensor().SerializeAsString(), send->tensor().SerializeAsString());

  proto::CleanupGraphRequest cleanup;
  cleanup.set_step_id(3);
  proto::CleanupGraphResponse cleanup_response;
  ASSERT_TRUE(remote_.CleanupGraph(nullptr, cleanup, &cleanup_response).ok());
  EXPECT_EQ(fixture_.worker.last_cleanup_step(), 3);

  proto::DeregisterGraphRequest deregister;
  deregister.set_session_handle("s1");
  proto::DeregisterGraphResponse deregister_response;
  EXPECT_TRUE(remote_.DeregisterGraph(nullptr, deregister, &deregister_response).ok());

  proto::DeleteWorkerSessionRequest remove;
  remove.set_session_handle("s1");
  proto::DeleteWorkerSessionResponse remove_response;
  EXPECT_TRUE(remote_.DeleteWorkerSession(&options, remove, &remove_response).ok());
}

TEST_F(GrpcWorkerServiceTest, ErrorsKeepCodeAndMessageAndNameTheTask) {
  proto::CreateWorkerSessionRequest create;
  create.set_session_handle("bad");
  proto::CreateWorkerSessionResponse create_response;
  Status status = remote_.CreateWorkerSession(nullptr, create, &create_response);
  EXPECT_EQ(status.code(), Code::kNotFound);
  EXPECT_EQ(status.message(),
            StrCat("CreateWorkerSession to ", kTask, " at ", fixture_.server->address(),
                   ": session handle bad is not known"));

  CallOptions options;
  SetDeadline(&options);
  proto::RunGraphRequest run;
  run.set_graph_handle("bad");
  run.set_step_id(9);
  proto::RunGraphResponse run_response;
  status = remote_.RunGraph(&options, run, &run_response);
  EXPECT_EQ(status.code(), Code::kAborted);
  EXPECT_NE(status.message().find("step 9: graph handle bad is gone"), std::string::npos);

  proto::RecvTensorRequest recv;
  recv.set_step_id(4);
  recv.set_rendezvous_key("missing-key");
  TensorResponse recv_response;
  status = remote_.RecvTensor(&options, recv, &recv_response);
  EXPECT_EQ(status.code(), Code::kNotFound);
  EXPECT_NE(status.message().find("missing-key"), std::string::npos);
}

TEST_F(GrpcWorkerServiceTest, RecvTensorIsByteExactAtEverySize) {
  const int64_t sizes[] = {4, 4 << 10, 1 << 20, int64_t{64} << 20};
  for (int64_t size : sizes) {
    Tensor value = PatternTensor(size, static_cast<uint8_t>(size % 251));
    const std::string key = "key-" + std::to_string(size);
    fixture_.worker.Put(key, value);
    for (GrpcRemoteWorker* remote : {&remote_, &remote_without_bulk_}) {
      CallOptions options;
      SetDeadline(&options);
      proto::RecvTensorRequest recv;
      recv.set_step_id(11);
      recv.set_rendezvous_key(key);
      TensorResponse response;
      Status status = remote->RecvTensor(&options, recv, &response);
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_FALSE(response.is_dead);
      EXPECT_TRUE(SameBytes(response.tensor, value)) << size;
      EXPECT_FALSE(response.tensor.SharesBufferWith(value));
    }
  }
  EXPECT_EQ(fixture_.bulk_server->NumOffered(), 0u);
}

TEST_F(GrpcWorkerServiceTest, RecvTensorKeepsTypeShapeAndDeadness) {
  Tensor value = Tensor::FromVector<double>(std::vector<double>(600, 2.5), TensorShape({20, 30}));
  fixture_.worker.Put("doubles", value);
  CallOptions options;
  SetDeadline(&options);
  proto::RecvTensorRequest recv;
  recv.set_rendezvous_key("doubles");
  TensorResponse response;
  ASSERT_TRUE(remote_.RecvTensor(&options, recv, &response).ok());
  EXPECT_TRUE(SameBytes(response.tensor, value));

  recv.set_rendezvous_key("dead");
  TensorResponse dead;
  ASSERT_TRUE(remote_.RecvTensor(&options, recv, &dead).ok());
  EXPECT_TRUE(dead.is_dead);
}

TEST_F(GrpcWorkerServiceTest, HandEncodedResponseMatchesProtobuf) {
  for (int64_t size :
       {int64_t{0}, int64_t{4}, int64_t{1024}, int64_t{1025}, int64_t{4096}, int64_t{300000}}) {
    for (bool is_dead : {false, true}) {
      Tensor value = PatternTensor(size, 5);
      proto::RecvTensorResponse expected;
      *expected.mutable_tensor() = ToProto(value);
      expected.set_is_dead(is_dead);
      grpc::ByteBuffer encoded = EncodeRecvTensorResponse(value, is_dead).value();
      EXPECT_EQ(ByteBufferToString(encoded), expected.SerializeAsString()) << size;
      proto::RecvTensorResponse parsed;
      ASSERT_TRUE(ParseFromByteBuffer(encoded, &parsed).ok());
      EXPECT_EQ(parsed.tensor().tensor_content().size(), static_cast<size_t>(size));
      EXPECT_EQ(parsed.is_dead(), is_dead);
    }
  }
  // Shapes with several dimensions and other types, including a scalar.
  for (const Tensor& value :
       {Tensor::FromVector<float>(std::vector<float>(1000, 1.5f), TensorShape({10, 10, 10})),
        Tensor::Scalar<int64_t>(7)}) {
    proto::RecvTensorResponse expected;
    *expected.mutable_tensor() = ToProto(value);
    EXPECT_EQ(ByteBufferToString(EncodeRecvTensorResponse(value, false).value()),
              expected.SerializeAsString());
  }
}

TEST_F(GrpcWorkerServiceTest, ZeroCopyResponseKeepsTheBufferAlive) {
  grpc::ByteBuffer encoded;
  std::string expected;
  {
    Tensor value = PatternTensor(5000, 8);
    proto::RecvTensorResponse response;
    *response.mutable_tensor() = ToProto(value);
    expected = response.SerializeAsString();
    encoded = EncodeRecvTensorResponse(value, false).value();
  }
  EXPECT_EQ(ByteBufferToString(encoded), expected);
}

TEST_F(GrpcWorkerServiceTest, CleanupGraphReleasesBulkTickets) {
  uint64_t ticket = fixture_.bulk_server->Offer(21, PatternTensor(100000, 1));
  EXPECT_EQ(fixture_.bulk_server->NumOffered(), 1u);
  proto::CleanupGraphRequest cleanup;
  cleanup.set_step_id(21);
  proto::CleanupGraphResponse response;
  ASSERT_TRUE(remote_.CleanupGraph(nullptr, cleanup, &response).ok());
  EXPECT_EQ(fixture_.bulk_server->NumOffered(), 0u);
  (void)ticket;
}

TEST_F(GrpcWorkerServiceTest, MalformedRequestsToEveryMethodAreInvalidArgument) {
  const char* methods[] = {"GetStatus",     "CreateWorkerSession", "DeleteWorkerSession",
                           "RegisterGraph", "DeregisterGraph",     "RunGraph",
                           "CleanupGraph",  "RecvTensor"};
  proto::RunGraphRequest long_request;
  long_request.set_session_handle(std::string(100, 's'));
  std::string truncated = long_request.SerializeAsString();
  truncated.resize(truncated.size() / 2);
  const std::string bad_inputs[] = {std::string("\xff\xff\xff\xff\xff\xff", 6),
                                    std::string("\x0a\x10"
                                                "ab",
                                                4),
                                    truncated};
  for (const char* method : methods) {
    for (const std::string& bad : bad_inputs) {
      grpc::Status status =
          RawUnaryCall(channel_, std::string("/weft.proto.WorkerService/") + method, bad);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
      EXPECT_NE(status.error_message().find(std::string("malformed ") + method + " request"),
                std::string::npos)
          << status.error_message();
    }
  }
  EXPECT_EQ(RawUnaryCall(channel_, "/weft.proto.WorkerService/Bogus", "").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  CallOptions options;
  SetDeadline(&options);
  proto::GetStatusResponse response;
  EXPECT_TRUE(remote_.GetStatus(&options, proto::GetStatusRequest(), &response).ok());
}

TEST_F(GrpcWorkerServiceTest, CancellingRecvTensorReachesTheWorker) {
  CallOptions options;
  SetDeadline(&options);
  proto::RecvTensorRequest recv;
  recv.set_rendezvous_key("block");
  TensorResponse response;
  Notification finished;
  Status result;
  remote_.RecvTensorAsync(&options, &recv, &response, [&](const Status& status) {
    result = status;
    finished.Notify();
  });
  ASSERT_TRUE(
      fixture_.worker.recv_blocked.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
  EXPECT_FALSE(finished.HasBeenNotified());
  options.StartCancel();
  ASSERT_TRUE(finished.WaitForNotificationWithTimeout(std::chrono::seconds(5)));
  EXPECT_EQ(result.code(), Code::kCancelled);
  EXPECT_NE(result.message().find(kTask), std::string::npos);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Not a pass/fail check (the machine is shared): logs the bulk RecvTensor rate beside the raw
// loopback rate of the same bulk path, for the 70% target.
TEST_F(GrpcWorkerServiceTest, LogsLargeRecvTensorThroughput) {
  constexpr int64_t kBytes = int64_t{64} << 20;
  Tensor value = testing::PatternTensor(kBytes, 3);
  fixture_.worker.Put("big", value);
  double best_rpc = 0;
  double best_raw = 0;
  BulkTransferClient raw_client;
  Tensor destination(DataType::kUInt8, TensorShape({kBytes}));
  for (int round = 0; round < 3; ++round) {
    CallOptions options;
    SetDeadline(&options);
    proto::RecvTensorRequest recv;
    recv.set_rendezvous_key("big");
    TensorResponse response;
    auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(remote_.RecvTensor(&options, recv, &response).ok());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best_rpc = std::max(best_rpc, kBytes / seconds / 1e9);

    uint64_t ticket = fixture_.bulk_server->Offer(1, value);
    Notification finished;
    start = std::chrono::steady_clock::now();
    raw_client.FetchAsync("127.0.0.1", fixture_.bulk_server->port(), ticket, destination.raw_data(),
                          kBytes, [&](const Status& status) {
                            EXPECT_TRUE(status.ok()) << status;
                            finished.Notify();
                          });
    ASSERT_TRUE(finished.WaitForNotificationWithTimeout(std::chrono::seconds(30)));
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best_raw = std::max(best_raw, kBytes / seconds / 1e9);
  }
  std::printf("RecvTensor 64 MB: %.2f GB/s; bulk path alone: %.2f GB/s\n", best_rpc, best_raw);
}

}  // namespace
}  // namespace weft
