// Multi-process tests of the distributed runtime: real `weft server` processes on loopback, each on
// an ephemeral port, joined by the cluster the client sends with its session (ClusterSpec
// propagation). Covers results across processes, concurrent sessions, a worker killed mid-training,
// a worker that never comes up, garbage on the wire, a clean SIGTERM and checkpoints written by
// every task. Every server is torn down
// by its ServerProcess, even when a test fails.
#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "weft/cli/testing/cluster_test_util.h"
#include "weft/core/notification.h"
#include "weft/core/str_util.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/rpc/grpc_session.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/scope.h"
#include "weft/graph/builder/variable.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/master.pb.h"
#include "weft/testing/child_process.h"
#include "weft/testing/server_process.h"

namespace weft::cli {
namespace {

using testing::Addresses;
using testing::BuildCrossTaskGraph;
using testing::ClusterOptions;
using testing::CrossTaskGraph;
using testing::ExpectServesASessionAlone;
using testing::InterruptedTraining;
using testing::InterruptTraining;
using testing::kTask0;
using testing::kTask1;
using testing::NewInitializedCrossTaskSession;
using testing::NewSessionOrDie;
using testing::NowMs;
using testing::ScalarOf;
using testing::ServerProcess;
using testing::StartCluster;

using ::testing::HasSubstr;

TEST(ClusterTest, StepCrossesServersAndKeepsVariables) {
  auto servers = StartCluster(2);
  ASSERT_EQ(servers.size(), 2u);
  std::unique_ptr<Session> session = NewSessionOrDie(ClusterOptions(Addresses(servers)));
  ASSERT_NE(session, nullptr);
  std::vector<proto::DeviceAttributes> devices;
  ASSERT_TRUE(session->ListDevices(&devices).ok());
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].name(), std::string(kTask0) + "/device:CPU:0");
  EXPECT_EQ(devices[1].name(), std::string(kTask1) + "/device:CPU:0");

  CrossTaskGraph graph = BuildCrossTaskGraph(10.0f);
  ASSERT_TRUE(session->Create(graph.graph).ok());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, {graph.init}, &outputs).ok());
  for (int step = 1; step <= 3; ++step) {
    Status status =
        session->Run({{graph.x, Tensor::Scalar(2.0f)}}, {graph.y}, {graph.update}, &outputs);
    ASSERT_TRUE(status.ok()) << status.ToString();
    ASSERT_EQ(outputs.size(), 1u);
    // The update may run before or after the read in the same step; the read of the next step
    // sees every earlier update.
    const float before = 10.0f + 2.0f * (step - 1);
    EXPECT_THAT(ScalarOf(outputs[0]), ::testing::AnyOf(6.0f + before, 6.0f + before + 2.0f));
  }
  ASSERT_TRUE(session->Run({}, {graph.read}, {}, &outputs).ok());
  EXPECT_EQ(ScalarOf(outputs[0]), 16.0f);
  EXPECT_TRUE(session->Close().ok());
}

TEST(ClusterTest, ErrorOnOneWorkerNamesItAndTheSessionGoesOn) {
  auto servers = StartCluster(2);
  ASSERT_EQ(servers.size(), 2u);
  std::unique_ptr<Session> session = NewSessionOrDie(ClusterOptions(Addresses(servers)));
  ASSERT_NE(session, nullptr);
  Scope root = Scope::NewRootScope();
  Scope on_task1 = root.WithDevice(std::string(kTask1) + "/device:CPU:0");
  Output a = ops::Placeholder(root.WithOpName("a"), DataType::kFloat);
  Output b = ops::Placeholder(root.WithOpName("b"), DataType::kFloat);
  Output product = ops::MatMul(on_task1.WithOpName("product"), a, b);
  ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  Tensor two_by_three = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Status status = session->Run({{a.name(), two_by_three}, {b.name(), two_by_three}},
                               {product.name()}, {}, &outputs);
  EXPECT_TRUE(IsInvalidArgument(status)) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("product"));
  EXPECT_THAT(status.message(), HasSubstr(kTask1));
  Tensor three_by_two = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  status = session->Run({{a.name(), two_by_three}, {b.name(), three_by_two}}, {product.name()}, {},
                        &outputs);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(outputs[0].shape(), TensorShape({2, 2}));
}

TEST(ClusterTest, EightConcurrentSessionsGetTheirOwnResults) {
  auto servers = StartCluster(2);
  ASSERT_EQ(servers.size(), 2u);
  const SessionOptions options = ClusterOptions(Addresses(servers));
  constexpr int kSessions = 8;
  constexpr int kSteps = 20;
  std::vector<Status> results(kSessions);
  std::vector<std::thread> threads;
  for (int s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s] {
      results[s] = [&]() -> Status {
        WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options));
        // Same variable name in every session: sessions must not share it.
        CrossTaskGraph graph = BuildCrossTaskGraph(100.0f * s);
        WEFT_RETURN_IF_ERROR(session->Create(graph.graph));
        std::vector<Tensor> outputs;
        WEFT_RETURN_IF_ERROR(session->Run({}, {}, {graph.init}, &outputs));
        for (int step = 0; step < kSteps; ++step) {
          WEFT_RETURN_IF_ERROR(
              session->Run({{graph.x, Tensor::Scalar(1.0f * s)}}, {}, {graph.update}, &outputs));
        }
        WEFT_RETURN_IF_ERROR(
            session->Run({{graph.x, Tensor::Scalar(0.0f)}}, {graph.read, graph.y}, {}, &outputs));
        const float expected = 100.0f * s + kSteps * s;
        if (ScalarOf(outputs[0]) != expected || ScalarOf(outputs[1]) != expected) {
          return Internal("session ", s, " read ", ScalarOf(outputs[0]), " and ",
                          ScalarOf(outputs[1]), ", expected ", expected);
        }
        return session->Close();
      }();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int s = 0; s < kSessions; ++s) EXPECT_TRUE(results[s].ok()) << results[s].ToString();
}

TEST(ClusterTest, KilledWorkerIsUnavailableAndARestartedOneTrainsAgain) {
  auto servers = StartCluster(2);
  ASSERT_EQ(servers.size(), 2u);
  std::vector<std::string> addresses = Addresses(servers);
  CrossTaskGraph graph;
  std::unique_ptr<Session> session =
      NewInitializedCrossTaskSession(ClusterOptions(addresses), &graph);
  ASSERT_NE(session, nullptr);

  // Steps run in a loop on another thread while worker 1 dies under them.
  const InterruptedTraining training =
      InterruptTraining(session.get(), graph, servers[1].get(), SIGKILL);
  const Status& failure = training.failure;
  ASSERT_FALSE(failure.ok());
  EXPECT_TRUE(IsUnavailable(failure)) << failure.ToString();
  EXPECT_THAT(failure.message(), HasSubstr(kTask1));
  EXPECT_LT(training.failed_after_ms, 10000);

  // The surviving server still serves a session of its own.
  ExpectServesASessionAlone(addresses[0]);
  std::vector<Tensor> outputs;

  // A restarted worker 1 (on a new port) joins a new session, which trains again.
  StatusOr<std::unique_ptr<ServerProcess>> restarted = ServerProcess::Start(
      WEFT_BINARY, {"--cluster", "worker=127.0.0.1:0,127.0.0.1:0", "--task", "1"});
  ASSERT_TRUE(restarted.ok()) << restarted.status().ToString();
  addresses[1] = (*restarted)->address();
  std::unique_ptr<Session> again = NewSessionOrDie(ClusterOptions(addresses));
  ASSERT_NE(again, nullptr);
  ASSERT_TRUE(again->Create(graph.graph).ok());
  ASSERT_TRUE(again->Run({}, {}, {graph.init}, &outputs).ok());
  Status status = again->Run({{graph.x, Tensor::Scalar(1.0f)}}, {graph.y}, {}, &outputs);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(ScalarOf(outputs[0]), 3.0f);
}

TEST(ClusterTest, WorkerThatNeverComesUpIsAClearErrorWithinTheDeadline) {
  auto servers = StartCluster(1, {"--worker-timeout-ms", "1500"});
  ASSERT_EQ(servers.size(), 1u);
  const std::string nobody = StrCat("127.0.0.1:", weft::testing::UnusedLoopbackPort());
  std::unique_ptr<Session> session =
      NewSessionOrDie(ClusterOptions({servers[0]->address(), nobody}));
  ASSERT_NE(session, nullptr);
  const int64_t start = NowMs();
  Scope root = Scope::NewRootScope();
  ops::Add(root.WithOpName("sum"), 1.0f, 2.0f);
  Status status = session->Create(root.ToGraphDef().value());
  const int64_t waited = NowMs() - start;
  EXPECT_TRUE(IsUnavailable(status) || IsDeadlineExceeded(status)) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr(kTask1));
  EXPECT_THAT(status.message(), HasSubstr(nobody));
  EXPECT_GE(waited, 1000);
  EXPECT_LT(waited, 10000);
}

TEST(ClusterTest, WorkerThatComesUpLateIsWaitedFor) {
  auto servers = StartCluster(1);
  ASSERT_EQ(servers.size(), 1u);
  weft::testing::HeldLoopbackPort late_port;
  ASSERT_NE(late_port.port(), 0);
  const std::string late = StrCat("127.0.0.1:", late_port.port());
  std::unique_ptr<ServerProcess> late_server;
  std::thread starter([&] {
    // Task 1 comes up once the master is trying to reach it.
    if (!late_port.WaitForConnection(20000)) return;
    late_port.Release();
    StatusOr<std::unique_ptr<ServerProcess>> started = ServerProcess::Start(
        WEFT_BINARY, {"--cluster", "worker=127.0.0.1:0," + late, "--task", "1"});
    if (started.ok()) late_server = std::move(started).value();
  });
  std::unique_ptr<Session> session = NewSessionOrDie(ClusterOptions({servers[0]->address(), late}));
  CrossTaskGraph graph = BuildCrossTaskGraph(1.0f);
  Status created = session->Create(graph.graph);
  starter.join();
  ASSERT_NE(late_server, nullptr) << "the late server did not start on " << late;
  ASSERT_TRUE(created.ok()) << created.ToString();
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, {graph.init}, &outputs).ok());
  Status status = session->Run({{graph.x, Tensor::Scalar(1.0f)}}, {graph.y}, {}, &outputs);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(ScalarOf(outputs[0]), 4.0f);
}

// Sends `bytes` as the request of `method` without any proto in between.
grpc::Status CallWithRawBytes(const std::string& address, const std::string& method,
                              const std::string& bytes) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  Notification done;
  grpc::Status result;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status status) {
                   result = status;
                   done.Notify();
                 });
  done.WaitForNotification();
  return result;
}

TEST(ClusterTest, GarbageOnTheWireIsInvalidArgumentAndTheServerSurvives) {
  auto servers = StartCluster(1);
  ASSERT_EQ(servers.size(), 1u);
  const std::string address = servers[0]->address();
  const std::vector<std::string> methods = {"/weft.proto.WorkerService/GetStatus",
                                            "/weft.proto.WorkerService/CreateWorkerSession",
                                            "/weft.proto.WorkerService/DeleteWorkerSession",
                                            "/weft.proto.WorkerService/RegisterGraph",
                                            "/weft.proto.WorkerService/DeregisterGraph",
                                            "/weft.proto.WorkerService/RunGraph",
                                            "/weft.proto.WorkerService/CleanupGraph",
                                            "/weft.proto.WorkerService/RecvTensor",
                                            "/weft.proto.MasterService/CreateSession",
                                            "/weft.proto.MasterService/ExtendSession",
                                            "/weft.proto.MasterService/RunStep",
                                            "/weft.proto.MasterService/CloseSession",
                                            "/weft.proto.MasterService/ListDevices",
                                            "/weft.proto.MasterService/Reset"};
  // An invalid tag, and a length-delimited field cut short.
  const std::vector<std::string> garbage = {std::string("\xff\xff\xff\xff\xff\xff", 6),
                                            std::string("\x0a\x40truncated", 11)};
  for (const std::string& method : methods) {
    for (const std::string& bytes : garbage) {
      grpc::Status status = CallWithRawBytes(address, method, bytes);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
          << method << ": " << status.error_message();
    }
  }
  EXPECT_EQ(CallWithRawBytes(address, "/weft.proto.WorkerService/NoSuchMethod", "").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  // Unknown handles are refused by name, and the server is still there.
  proto::RunStepRequest run_step;
  run_step.set_session_handle("no-such-session");
  grpc::Status status =
      CallWithRawBytes(address, "/weft.proto.MasterService/RunStep", run_step.SerializeAsString());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("no-such-session"));
  proto::RunGraphRequest run_graph;
  run_graph.set_session_handle("no-such-session");
  status = CallWithRawBytes(address, "/weft.proto.WorkerService/RunGraph",
                            run_graph.SerializeAsString());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED) << status.error_message();
  EXPECT_EQ(CallWithRawBytes(address, "/weft.proto.WorkerService/GetStatus", "").error_code(),
            grpc::StatusCode::OK);
}

TEST(ClusterTest, SigtermStopsTheServerCleanly) {
  auto servers = StartCluster(1);
  ASSERT_EQ(servers.size(), 1u);
  servers[0]->Signal(SIGTERM);
  StatusOr<int> exit_code = servers[0]->WaitForExit(10000);
  ASSERT_TRUE(exit_code.ok()) << exit_code.status().ToString();
  EXPECT_EQ(*exit_code, 0);
}

// `weft train --target` with checkpoints: each task writes the shard of the variables it holds
// into the shared directory (mirrored variables spread over the tasks), and a second run resumes
// from it through the cluster.
TEST(ClusterTest, EveryTaskWritesItsShardAndARunResumesThroughTheCluster) {
  auto servers = StartCluster(2);
  ASSERT_EQ(servers.size(), 2u);
  const std::vector<std::string> addresses = Addresses(servers);
  io::testing::TempDir temp_dir;
  const std::string dir = temp_dir.path();
  auto train = [&](const std::string& max_steps) {
    return weft::testing::ChildProcess::Start(
        {WEFT_BINARY, "train", "--model", "mlp", "--epochs", "1", "--max-steps", max_steps,
         "--target", "grpc://" + addresses[0], "--cluster",
         "worker=" + addresses[0] + "," + addresses[1], "--checkpoint-dir", dir, "--json"});
  };
  auto first = train("6");
  ASSERT_TRUE(first.ok()) << first.status();
  StatusOr<int> code = (*first)->WaitForExit(120000);
  ASSERT_TRUE(code.ok() && *code == 0) << (*first)->output();
  EXPECT_EQ(io::ListDirectory(dir + "/ckpt-6").value(),
            (std::vector<std::string>{"manifest.json", "shard-00000-of-00002.safetensors",
                                      "shard-00001-of-00002.safetensors"}));
  auto second = train("12");
  ASSERT_TRUE(second.ok()) << second.status();
  code = (*second)->WaitForExit(120000);
  ASSERT_TRUE(code.ok() && *code == 0) << (*second)->output();
  EXPECT_THAT((*second)->output(), HasSubstr("\"resumed_from_step\":6"));
  EXPECT_THAT((*second)->output(), HasSubstr("\"steps\":12"));
}

TEST(ClusterTest, BadFlagsAndClustersExitWithUsageErrors) {
  StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start(WEFT_BINARY, {"--cluster", "worker=127.0.0.1:0", "--task", "3"}, 5000);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("code 2"));
  server = ServerProcess::Start(WEFT_BINARY, {"--cluster", "worker=nonsense"}, 5000);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("code 2"));
}

}  // namespace
}  // namespace weft::cli

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  weft::RegisterGrpcSessionFactory();
  return RUN_ALL_TESTS();
}
