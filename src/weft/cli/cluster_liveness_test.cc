// A worker that is alive but silent: real `weft server` processes on loopback, one of them stopped
// with SIGSTOP while steps run. The running step fails with DeadlineExceeded or Unavailable naming
// the stopped task and its address within the worker timeout (--worker-timeout-ms 2000 here), Close
// names it again without waiting for it, and a new session on the remaining worker trains on. The
// stopped server is continued and killed in teardown.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "weft/cli/testing/cluster_test_util.h"
#include "weft/testing/child_process.h"

namespace weft::cli {
namespace {

using testing::Addresses;
using testing::ClusterOptions;
using testing::CrossTaskGraph;
using testing::ExpectServesASessionAlone;
using testing::InterruptedTraining;
using testing::InterruptTraining;
using testing::kTask1;
using testing::NewInitializedCrossTaskSession;
using testing::NowMs;
using testing::ServerProcess;
using testing::StartCluster;

using ::testing::HasSubstr;

constexpr int64_t kWorkerTimeoutMs = 2000;
// Scheduling slack on a loaded 2-core machine, over the worker timeout.
constexpr int64_t kSlackMs = 3000;

// Sends SIGCONT on scope exit, so that a stopped server can be torn down like any other.
class ContinueOnExit {
 public:
  explicit ContinueOnExit(ServerProcess* server) : server_(server) {}
  ~ContinueOnExit() { server_->Signal(SIGCONT); }

 private:
  ServerProcess* const server_;
};

void ExpectNamesStoppedWorker(const Status& status, const std::string& address) {
  EXPECT_TRUE(IsDeadlineExceeded(status) || IsUnavailable(status)) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr(kTask1));
  EXPECT_THAT(status.message(), HasSubstr(address));
}

TEST(ClusterLivenessTest, StoppedWorkerFailsTheStepAndCloseAndTheRestTrainsOn) {
  auto servers = StartCluster(2, {"--worker-timeout-ms", std::to_string(kWorkerTimeoutMs)});
  ASSERT_EQ(servers.size(), 2u);
  ContinueOnExit continue_on_exit(servers[1].get());
  const std::vector<std::string> addresses = Addresses(servers);
  CrossTaskGraph graph;
  std::unique_ptr<Session> session =
      NewInitializedCrossTaskSession(ClusterOptions(addresses), &graph);
  ASSERT_NE(session, nullptr);

  const InterruptedTraining training =
      InterruptTraining(session.get(), graph, servers[1].get(), SIGSTOP);
  ExpectNamesStoppedWorker(training.failure, addresses[1]);
  EXPECT_LT(training.failed_after_ms, kWorkerTimeoutMs + kSlackMs);

  // The step found the worker silent: Close names it without waiting for it a second time.
  const int64_t close_start_ms = NowMs();
  const Status closed = session->Close();
  ExpectNamesStoppedWorker(closed, addresses[1]);
  EXPECT_THAT(closed.message(), HasSubstr("not waited for again"));
  EXPECT_LT(NowMs() - close_start_ms, kWorkerTimeoutMs / 2);

  // A new session on the remaining worker works.
  ExpectServesASessionAlone(addresses[0]);
}

TEST(ClusterLivenessTest, SessionConfigSetsItsOwnWorkerTimeout) {
  auto servers = StartCluster(2);  // the servers' default: 30 s
  ASSERT_EQ(servers.size(), 2u);
  ContinueOnExit continue_on_exit(servers[1].get());
  const std::vector<std::string> addresses = Addresses(servers);
  SessionOptions options = ClusterOptions(addresses);
  options.config.set_worker_timeout_in_ms(kWorkerTimeoutMs);
  CrossTaskGraph graph;
  std::unique_ptr<Session> session = NewInitializedCrossTaskSession(options, &graph);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> outputs;
  servers[1]->Signal(SIGSTOP);
  const int64_t start_ms = NowMs();
  Status status = session->Run({{graph.x, Tensor::Scalar(1.0f)}}, {graph.y}, {}, &outputs);
  ExpectNamesStoppedWorker(status, addresses[1]);
  EXPECT_LT(NowMs() - start_ms, kWorkerTimeoutMs + kSlackMs);
}

// `weft train --target` over a worker that is stopped mid-training: the step fails (the workers'
// collective heartbeat finds it silent within about 5 s), and Close waits for the stopped worker
// only until the master's own probe names it, so the client exits within one worker timeout of the
// stop plus the client's own ending (up to 3 s under ThreadSanitizer). Before, Close waited a whole
// timeout after the step failed: 5 s + 6 s + the ending.
TEST(ClusterLivenessTest, TrainClientExitsWithinOneTimeoutOfAStoppedWorker) {
  constexpr int64_t kTrainTimeoutMs = 6000;
  constexpr int64_t kEndingMs = 4500;
  auto servers = StartCluster(2);
  ASSERT_EQ(servers.size(), 2u);
  ContinueOnExit continue_on_exit(servers[1].get());
  const std::vector<std::string> addresses = Addresses(servers);
  auto client = weft::testing::ChildProcess::Start(
      {WEFT_BINARY, "train", "--model", "mlp", "--epochs", "50", "--target",
       "grpc://" + addresses[0], "--cluster", "worker=" + addresses[0] + "," + addresses[1],
       "--worker-timeout-ms", std::to_string(kTrainTimeoutMs)});
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->WaitForOutput("the first step finished", 120000).ok())
      << (*client)->output();
  servers[1]->Signal(SIGSTOP);
  const int64_t stopped_ms = NowMs();
  StatusOr<int> code = (*client)->WaitForExit(4 * kTrainTimeoutMs);
  const int64_t exited_after_ms = NowMs() - stopped_ms;
  ASSERT_TRUE(code.ok()) << code.status() << "\n" << (*client)->output();
  EXPECT_NE(*code, 0);
  EXPECT_THAT((*client)->output(), HasSubstr(kTask1));
  EXPECT_THAT((*client)->output(), HasSubstr(addresses[1]));
  EXPECT_LT(exited_after_ms, kTrainTimeoutMs + kEndingMs) << (*client)->output();
}

}  // namespace
}  // namespace weft::cli
