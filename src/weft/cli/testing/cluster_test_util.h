// Helpers of the multi-process cluster tests: start `n` real `weft server` processes on loopback
// (ephemeral ports, torn down by their ServerProcess), session options that join them, and a small
// graph spanning two tasks. For tests only; WEFT_BINARY names the `weft` binary.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/scope.h"
#include "weft/graph/builder/variable.h"
#include "weft/runtime/session.h"
#include "weft/testing/server_process.h"

namespace weft::cli::testing {

using weft::testing::ServerProcess;

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// `n` servers of job "worker", each told it is task i of an n-task cluster on ephemeral ports.
inline std::vector<std::unique_ptr<ServerProcess>> StartCluster(
    int n, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> placeholders(n, "127.0.0.1:0");
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> flags = {"--cluster",
                                      "worker=" + StrJoin(placeholders, ","),
                                      "--task",
                                      std::to_string(i),
                                      "--intra-op-threads",
                                      "1",
                                      "--inter-op-threads",
                                      "2"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(WEFT_BINARY, flags);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return {};
    servers.push_back(std::move(server).value());
  }
  return servers;
}

// Session options for the cluster made of `addresses`, its master on the first.
inline SessionOptions ClusterOptions(const std::vector<std::string>& addresses) {
  SessionOptions options;
  options.target = "grpc://" + addresses[0];
  *options.config.mutable_cluster_def() =
      ClusterSpec::FromJobs({{"worker", addresses}}).value().ToProto();
  return options;
}

inline std::vector<std::string> Addresses(
    const std::vector<std::unique_ptr<ServerProcess>>& servers) {
  std::vector<std::string> addresses;
  for (const auto& server : servers) addresses.push_back(server->address());
  return addresses;
}

inline std::unique_ptr<Session> NewSessionOrDie(const SessionOptions& options) {
  StatusOr<std::unique_ptr<Session>> session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  return session.ok() ? std::move(session).value() : nullptr;
}

// x (fed, task 0) * 3 (task 1) + a variable on task 1 holding `initial`, fetched on task 0; and an
// update that adds x to the variable.
struct CrossTaskGraph {
  proto::GraphDef graph;
  std::string x, y, init, update, read;
};

inline CrossTaskGraph BuildCrossTaskGraph(float initial) {
  Scope root = Scope::NewRootScope();
  Scope on_task0 = root.WithDevice(std::string(kTask0) + "/device:CPU:0");
  Scope on_task1 = root.WithDevice(std::string(kTask1) + "/device:CPU:0");
  CrossTaskGraph result;
  Output x = ops::Placeholder(on_task0.WithOpName("x"), DataType::kFloat);
  Variable v = Variable::Create(on_task1.WithOpName("v"), "v", TensorShape({}), DataType::kFloat,
                                Initializer::Constant(initial));
  Output tripled = ops::Mul(on_task1.WithOpName("tripled"), x, 3.0f);
  Output read = v.Read(on_task1.WithOpName("read"));
  Output y = ops::Add(on_task0.WithOpName("y"), tripled, read);
  Output update = v.AssignAdd(on_task1.WithOpName("update"), x);
  result.graph = root.ToGraphDef().value();
  result.x = x.name();
  result.y = y.name();
  result.init = v.initializer().name();
  result.update = update.node()->name();
  result.read = read.name();
  return result;
}

// A session with `options` whose graph is BuildCrossTaskGraph(0) with its variable initialised;
// null (and the test failed) when any of that fails.
inline std::unique_ptr<Session> NewInitializedCrossTaskSession(const SessionOptions& options,
                                                               CrossTaskGraph* graph) {
  std::unique_ptr<Session> session = NewSessionOrDie(options);
  if (session == nullptr) return nullptr;
  *graph = BuildCrossTaskGraph(0.0f);
  Status created = session->Create(graph->graph);
  EXPECT_TRUE(created.ok()) << created;
  std::vector<Tensor> outputs;
  Status initialized = created.ok() ? session->Run({}, {}, {graph->init}, &outputs) : created;
  EXPECT_TRUE(initialized.ok()) << initialized;
  return initialized.ok() ? std::move(session) : nullptr;
}

inline float ScalarOf(const Tensor& tensor) { return *tensor.data<float>(); }

// Runs training steps (x = 1: y and update) on a thread of its own until one fails or 60 s pass;
// a test waits for steps to have run instead of sleeping.
class StepLoop {
 public:
  StepLoop(Session* session, const CrossTaskGraph& graph, std::vector<Tensor>* outputs)
      : thread_([this, session, graph, outputs] {
          const int64_t give_up = NowMs() + 60000;
          while (NowMs() < give_up) {
            Status status =
                session->Run({{graph.x, Tensor::Scalar(1.0f)}}, {graph.y}, {graph.update}, outputs);
            MutexLock lock(mu_);
            if (!status.ok()) {
              failure_ = status;
              failed_at_ms_ = NowMs();
              break;
            }
            ++steps_;
            changed_.NotifyAll();
          }
          MutexLock lock(mu_);
          finished_ = true;
          changed_.NotifyAll();
        }) {}
  ~StepLoop() {
    if (thread_.joinable()) thread_.join();
  }

  // Whether `count` steps succeeded within 30 s (false when the loop ended first).
  bool WaitForSteps(int count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    MutexLock lock(mu_);
    while (steps_ < count && !finished_) {
      if (!changed_.WaitUntil(lock, deadline)) break;
    }
    return steps_ >= count;
  }
  // Waits for the loop to end; the failure that ended it (OK when it ran out of time).
  Status Join() {
    thread_.join();
    MutexLock lock(mu_);
    return failure_;
  }
  int64_t failed_at_ms() {
    MutexLock lock(mu_);
    return failed_at_ms_;
  }

 private:
  Mutex mu_;
  CondVar changed_;
  int steps_ WEFT_GUARDED_BY(mu_) = 0;
  bool finished_ WEFT_GUARDED_BY(mu_) = false;
  Status failure_ WEFT_GUARDED_BY(mu_);
  int64_t failed_at_ms_ WEFT_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts once the members above exist
};

// Trains over `session` on another thread and, once 3 steps have succeeded, sends `signal` to
// `server`: returns the training's failure and how many milliseconds after the signal it came.
struct InterruptedTraining {
  Status failure;
  int64_t failed_after_ms = 0;
};
inline InterruptedTraining InterruptTraining(Session* session, const CrossTaskGraph& graph,
                                             ServerProcess* server, int signal) {
  std::vector<Tensor> outputs;
  StepLoop training(session, graph, &outputs);
  if (!training.WaitForSteps(3)) {
    ADD_FAILURE() << "training did not reach 3 steps before the signal";
    return {training.Join(), 0};
  }
  const int64_t signalled_at_ms = NowMs();
  server->Signal(signal);
  InterruptedTraining result;
  result.failure = training.Join();
  result.failed_after_ms = training.failed_at_ms() - signalled_at_ms;
  return result;
}

// A session of its own on the server at `address` computes 1 + 2.
inline void ExpectServesASessionAlone(const std::string& address) {
  std::unique_ptr<Session> alone = NewSessionOrDie(ClusterOptions({address}));
  ASSERT_NE(alone, nullptr);
  Scope root = Scope::NewRootScope();
  Output sum = ops::Add(root.WithOpName("sum"), 1.0f, 2.0f);
  ASSERT_TRUE(alone->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  Status status = alone->Run({}, {sum.name()}, {}, &outputs);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(ScalarOf(outputs[0]), 3.0f);
  EXPECT_TRUE(alone->Close().ok());
}

}  // namespace weft::cli::testing
