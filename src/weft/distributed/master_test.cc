// The master over two real in-process Workers (job "worker", tasks 0 and 1) joined by a local
// worker cache, driven through NewLocalMaster: graphs spanning both tasks, registration caching,
// errors of one task reaching the client with the task named, deadlines, workers that never come
// up, unknown sessions, concurrent sessions, and CleanupGraph after every step.
#include "weft/distributed/master.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "weft/distributed/local_master.h"
#include "weft/distributed/local_worker_cache.h"
#include "weft/distributed/worker.h"
#include "weft/framework/tensor_proto_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";

using Clock = std::chrono::steady_clock;

// Forwards to a real worker, counting calls; can also play a worker that never comes up or one
// whose RunGraph never ends on its own (it answers Cancelled only when cancelled).
class CountingWorker final : public WorkerInterface {
 public:
  explicit CountingWorker(WorkerInterface* base) : base_(base) {}

  std::atomic<int> register_graph{0};
  std::atomic<int> cleanup_graph{0};
  std::atomic<int> run_graph{0};
  std::atomic<int> deregister_graph{0};
  std::atomic<int> delete_worker_session{0};
  std::atomic<bool> get_status_unavailable{false};
  std::atomic<bool> get_status_silent{false};
  std::atomic<bool> run_graph_hangs{false};

  void GetStatusAsync(CallOptions* options, const proto::GetStatusRequest* request,
                      proto::GetStatusResponse* response, StatusCallback done) override {
    if (get_status_unavailable) return done(Unavailable("connection refused"));
    if (get_status_silent) return AnswerOnlyWhenCancelled(options, std::move(done));
    base_->GetStatusAsync(options, request, response, std::move(done));
  }
  void CreateWorkerSessionAsync(const proto::CreateWorkerSessionRequest* request,
                                proto::CreateWorkerSessionResponse* response,
                                StatusCallback done) override {
    base_->CreateWorkerSessionAsync(request, response, std::move(done));
  }
  void DeleteWorkerSessionAsync(CallOptions* options,
                                const proto::DeleteWorkerSessionRequest* request,
                                proto::DeleteWorkerSessionResponse* response,
                                StatusCallback done) override {
    ++delete_worker_session;
    base_->DeleteWorkerSessionAsync(options, request, response, std::move(done));
  }
  void RegisterGraphAsync(const proto::RegisterGraphRequest* request,
                          proto::RegisterGraphResponse* response, StatusCallback done) override {
    ++register_graph;
    base_->RegisterGraphAsync(request, response, std::move(done));
  }
  void DeregisterGraphAsync(const proto::DeregisterGraphRequest* request,
                            proto::DeregisterGraphResponse* response,
                            StatusCallback done) override {
    ++deregister_graph;
    base_->DeregisterGraphAsync(request, response, std::move(done));
  }
  void RunGraphAsync(CallOptions* options, const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response, StatusCallback done) override {
    ++run_graph;
    if (run_graph_hangs) return AnswerOnlyWhenCancelled(options, std::move(done));
    base_->RunGraphAsync(options, request, response, std::move(done));
  }
  void CleanupGraphAsync(const proto::CleanupGraphRequest* request,
                         proto::CleanupGraphResponse* response, StatusCallback done) override {
    ++cleanup_graph;
    base_->CleanupGraphAsync(request, response, std::move(done));
  }
  void RecvTensorAsync(CallOptions* options, const proto::RecvTensorRequest* request,
                       TensorResponse* response, StatusCallback done) override {
    base_->RecvTensorAsync(options, request, response, std::move(done));
  }

 private:
  static void AnswerOnlyWhenCancelled(CallOptions* options, StatusCallback done) {
    options->SetCancelCallback([done = std::move(done)] { done(Cancelled("call cancelled")); });
  }
  WorkerInterface* const base_;
};

// Two worker tasks and a master on task 0. Members are destroyed in reverse order: the master
// first, the workers last.
class MasterTest : public ::testing::Test {
 protected:
  void SetUp() override { StartCluster(); }

  void StartCluster(int64_t worker_ready_timeout_ms = 10'000) {
    std::map<std::string, WorkerInterface*> raw;
    std::map<std::string, WorkerInterface*> counted;
    for (int task = 0; task < 2; ++task) {
      std::string name = task == 0 ? kTask0 : kTask1;
      auto devices = CreateLocalDevices(proto::ConfigProto(), 1, "worker", task);
      ASSERT_TRUE(devices.ok()) << devices.status();
      device_mgrs_.push_back(std::move(devices).value());
      compute_pools_.push_back(std::make_unique<ThreadPool>("compute" + std::to_string(task), 2));
      auto env = std::make_unique<WorkerEnv>();
      env->task_name = name;
      env->devices = device_mgrs_.back().get();
      env->op_registry = &ops::AllOps();
      env->kernel_registry = &kernels::AllKernels();
      env->compute_pool = compute_pools_.back().get();
      worker_envs_.push_back(std::move(env));
      workers_.push_back(std::make_unique<Worker>(worker_envs_.back().get()));
      counting_.push_back(std::make_unique<CountingWorker>(workers_.back().get()));
      raw[name] = workers_.back().get();
      counted[name] = counting_.back().get();
    }
    peer_cache_ = NewLocalWorkerCache(raw);
    for (auto& env : worker_envs_) env->worker_cache = peer_cache_.get();
    master_cache_ = NewLocalWorkerCache(counted);
    master_pool_ = std::make_unique<ThreadPool>("master", 4);
    master_env_.local_task = kTask0;
    master_env_.worker_cache = master_cache_.get();
    master_env_.op_registry = &ops::AllOps();
    master_env_.kernel_registry = &kernels::AllKernels();
    master_env_.pool = master_pool_.get();
    master_env_.worker_ready_timeout_ms = worker_ready_timeout_ms;
    master_ = std::make_unique<Master>(&master_env_);
    client_ = NewLocalMaster(master_.get());
  }

  StatusOr<std::string> CreateSession(const proto::GraphDef& graph, int64_t timeout_ms = 20'000) {
    proto::CreateSessionRequest request;
    *request.mutable_graph_def() = graph;
    request.mutable_config()->set_operation_timeout_in_ms(timeout_ms);
    proto::CreateSessionResponse response;
    WEFT_RETURN_IF_ERROR(client_->CreateSession(nullptr, request, &response));
    EXPECT_EQ(response.graph_version(), 0);
    return response.session_handle();
  }

  Status Run(const std::string& handle, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, proto::RunOptions options = {}) {
    proto::RunStepRequest request;
    request.set_session_handle(handle);
    for (const auto& [name, value] : feeds) {
      proto::NamedTensorProto* feed = request.add_feed();
      feed->set_name(name);
      *feed->mutable_tensor() = ToProto(value);
    }
    for (const auto& fetch : fetches) request.add_fetch(fetch);
    for (const auto& target : targets) request.add_target(target);
    *request.mutable_options() = options;
    proto::RunStepResponse response;
    WEFT_RETURN_IF_ERROR(client_->RunStep(nullptr, request, &response));
    if (response.tensor_size() != static_cast<int>(fetches.size())) {
      return Internal("expected ", fetches.size(), " fetches, got ", response.tensor_size());
    }
    outputs->clear();
    for (int i = 0; i < response.tensor_size(); ++i) {
      EXPECT_EQ(response.tensor(i).name(), fetches[i]);
      WEFT_ASSIGN_OR_RETURN(Tensor value, TensorFromProto(response.tensor(i).tensor()));
      outputs->push_back(std::move(value));
    }
    return Status::OK();
  }

  int TotalRegistrations() const {
    return counting_[0]->register_graph + counting_[1]->register_graph;
  }
  int TotalCleanups() const { return counting_[0]->cleanup_graph + counting_[1]->cleanup_graph; }

  // Waits (bounded) for asynchronous cleanups to reach `count`.
  bool WaitForCleanups(int count) const {
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (TotalCleanups() < count && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return TotalCleanups() >= count;
  }

  std::vector<std::unique_ptr<DeviceMgr>> device_mgrs_;
  std::vector<std::unique_ptr<ThreadPool>> compute_pools_;
  std::vector<std::unique_ptr<WorkerEnv>> worker_envs_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<CountingWorker>> counting_;
  std::unique_ptr<WorkerCacheInterface> peer_cache_;
  std::unique_ptr<WorkerCacheInterface> master_cache_;
  std::unique_ptr<ThreadPool> master_pool_;
  MasterEnv master_env_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<MasterInterface> client_;
};

// x (fed, task 0) -> square on task 1 -> plus one on task 0; u (fed on task 1) -> neg on task 1.
proto::GraphDef SpanningGraph() {
  Scope root = Scope::NewRootScope();
  Scope on_task1 = root.WithDevice(kTask1);
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, PartialShape({-1}));
  auto squared = ops::Square(on_task1.WithOpName("squared"), x);
  auto one = ops::Const(root.WithOpName("one"), 1.0f);
  ops::Add(root.WithOpName("y"), squared, one);
  auto u = ops::Placeholder(on_task1.WithOpName("u"), DataType::kFloat, PartialShape({-1}));
  ops::Neg(on_task1.WithOpName("negated"), u);
  // Fails at run time on task 1 when x has other than 4 elements.
  ops::Reshape(on_task1.WithOpName("reshaped"), squared, Tensor::FromVector<int32_t>({2, 2}));
  return root.ToGraphDef().value();
}

TEST_F(MasterTest, GraphSpanningBothTasksComputesTheRightValues) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> outputs;
  Status s =
      Run(*handle,
          {{"x", Tensor::FromVector<float>({1, 2, 3})}, {"u", Tensor::FromVector<float>({5, -6})}},
          {"y", "negated", "squared"}, {}, &outputs);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TENSOR_EQ(outputs[0], Tensor::FromVector<float>({2, 5, 10}));
  EXPECT_TENSOR_EQ(outputs[1], Tensor::FromVector<float>({-5, 6}));
  EXPECT_TENSOR_EQ(outputs[2], Tensor::FromVector<float>({1, 4, 9}));
  // Both tasks took part.
  EXPECT_GE(counting_[0]->run_graph, 1);
  EXPECT_GE(counting_[1]->run_graph, 1);
}

TEST_F(MasterTest, ListDevicesPutsTheMastersTaskFirst) {
  proto::ListDevicesRequest request;
  proto::ListDevicesResponse response;
  ASSERT_TRUE(client_->ListDevices(nullptr, request, &response).ok());
  ASSERT_EQ(response.local_device_size(), 1);
  ASSERT_EQ(response.remote_device_size(), 1);
  EXPECT_EQ(response.local_device(0).name(), std::string(kTask0) + "/device:CPU:0");
  EXPECT_EQ(response.remote_device(0).name(), std::string(kTask1) + "/device:CPU:0");
}

TEST_F(MasterTest, SameSignatureRegistersOnceAndANewFetchSetRegistersAgain) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  Tensor x = Tensor::FromVector<float>({1, 2});
  std::vector<Tensor> outputs;
  ASSERT_TRUE(Run(*handle, {{"x", x}}, {"y", "squared"}, {}, &outputs).ok());
  const int after_first = TotalRegistrations();
  EXPECT_EQ(after_first, 2);  // one graph per task
  // The same set in another order.
  ASSERT_TRUE(Run(*handle, {{"x", x}}, {"squared", "y"}, {}, &outputs).ok());
  EXPECT_TENSOR_EQ(outputs[0], Tensor::FromVector<float>({1, 4}));
  EXPECT_TENSOR_EQ(outputs[1], Tensor::FromVector<float>({2, 5}));
  EXPECT_EQ(TotalRegistrations(), after_first);
  ASSERT_TRUE(Run(*handle, {{"x", x}}, {"y"}, {}, &outputs).ok());
  EXPECT_GT(TotalRegistrations(), after_first);
}

TEST_F(MasterTest, ExtendThenRun) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  proto::ExtendSessionRequest request;
  request.set_session_handle(*handle);
  {
    proto::GraphDef more;
    auto* node = more.add_node();
    node->set_name("doubled");
    node->set_op("Add");
    node->add_input("y");
    node->add_input("y");
    node->set_device(kTask1);
    (*node->mutable_attr())["T"].set_type(proto::DT_FLOAT);
    *request.mutable_graph_def() = more;
  }
  request.set_current_graph_version(3);
  proto::ExtendSessionResponse response;
  Status stale = client_->ExtendSession(nullptr, request, &response);
  EXPECT_TRUE(IsAborted(stale)) << stale;
  request.set_current_graph_version(0);
  Status extended = client_->ExtendSession(nullptr, request, &response);
  ASSERT_TRUE(extended.ok()) << extended;
  EXPECT_EQ(response.new_graph_version(), 1);
  std::vector<Tensor> outputs;
  Status s = Run(*handle, {{"x", Tensor::FromVector<float>({3})}}, {"doubled"}, {}, &outputs);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TENSOR_EQ(outputs[0], Tensor::FromVector<float>({20}));
}

TEST_F(MasterTest, OpErrorOnTaskOneReachesTheClientWithItsTaskAndTheNextStepWorks) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> outputs;
  // reshaped (task 1) fails; y (task 0) waits on task 1's square and is cancelled.
  Status s =
      Run(*handle, {{"x", Tensor::FromVector<float>({1, 2, 3})}}, {"y", "reshaped"}, {}, &outputs);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find(kTask1), std::string::npos) << s;
  EXPECT_NE(s.message().find("reshaped"), std::string::npos) << s;
  s = Run(*handle, {{"x", Tensor::FromVector<float>({1, 2, 3, 4})}}, {"y", "reshaped"}, {},
          &outputs);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TENSOR_EQ(outputs[1], Tensor::FromVector<float>({1, 4, 9, 16}, TensorShape({2, 2})));
}

TEST_F(MasterTest, CleanupGraphIsSentAfterSuccessAndFailure) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> outputs;
  ASSERT_TRUE(Run(*handle, {{"x", Tensor::FromVector<float>({1, 2, 3, 4})}}, {"reshaped", "y"}, {},
                  &outputs)
                  .ok());
  // Feeds and fetches live with their users: x on task 1 (its only consumer, squared, is there),
  // reshaped's fetch on task 1, y's on task 0. Only task 1 sends to another task (squared to y),
  // so only it keeps the step's rendezvous for a CleanupGraph; task 0 drops its own.
  EXPECT_TRUE(WaitForCleanups(1)) << TotalCleanups();
  EXPECT_EQ(counting_[1]->cleanup_graph, 1);
  EXPECT_EQ(counting_[0]->cleanup_graph, 0);
  // A failed step gets CleanupGraph everywhere.
  ASSERT_FALSE(
      Run(*handle, {{"x", Tensor::FromVector<float>({1})}}, {"reshaped", "y"}, {}, &outputs).ok());
  EXPECT_TRUE(WaitForCleanups(3)) << TotalCleanups();
  EXPECT_EQ(counting_[0]->cleanup_graph, 1);
  EXPECT_EQ(counting_[1]->cleanup_graph, 2);
}

TEST_F(MasterTest, StepThatNeverEndsFailsWithDeadlineExceededPromptly) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  counting_[1]->run_graph_hangs = true;
  proto::RunOptions options;
  options.set_timeout_in_ms(200);
  std::vector<Tensor> outputs;
  auto start = Clock::now();
  Status s = Run(*handle, {{"x", Tensor::FromVector<float>({1})}}, {"y"}, {}, &outputs, options);
  EXPECT_TRUE(IsDeadlineExceeded(s)) << s;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(WaitForCleanups(2)) << TotalCleanups();
  counting_[1]->run_graph_hangs = false;
  s = Run(*handle, {{"x", Tensor::FromVector<float>({2})}}, {"y"}, {}, &outputs);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TENSOR_EQ(outputs[0], Tensor::FromVector<float>({5}));
}

TEST_F(MasterTest, CancellingTheCallCancelsTheStep) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  counting_[1]->run_graph_hangs = true;
  proto::RunStepRequest request;
  request.set_session_handle(*handle);
  proto::NamedTensorProto* feed = request.add_feed();
  feed->set_name("x");
  *feed->mutable_tensor() = ToProto(Tensor::FromVector<float>({1}));
  request.add_fetch("y");
  proto::RunStepResponse response;
  CallOptions call;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    call.StartCancel();
  });
  Status s = client_->RunStep(&call, request, &response);
  canceller.join();
  EXPECT_TRUE(IsCancelled(s)) << s;
}

TEST_F(MasterTest, ClosingTheSessionCancelsItsRunningSteps) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  counting_[1]->run_graph_hangs = true;  // answers only when its RunGraph is cancelled
  Status step_status;
  std::thread step([&] {
    std::vector<Tensor> outputs;
    step_status = Run(*handle, {{"x", Tensor::FromVector<float>({1})}}, {"y"}, {}, &outputs);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = Clock::now();
  proto::CloseSessionRequest close;
  close.set_session_handle(*handle);
  proto::CloseSessionResponse closed;
  EXPECT_TRUE(client_->CloseSession(nullptr, close, &closed).ok());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  step.join();
  EXPECT_TRUE(IsCancelled(step_status)) << step_status;
  EXPECT_NE(step_status.message().find("closed"), std::string::npos) << step_status;
  counting_[1]->run_graph_hangs = false;
}

TEST_F(MasterTest, UnknownSessionHandleIsAborted) {
  proto::RunStepRequest request;
  request.set_session_handle("no-such-session");
  proto::RunStepResponse response;
  Status s = client_->RunStep(nullptr, request, &response);
  EXPECT_TRUE(IsAborted(s)) << s;
  EXPECT_NE(s.message().find("no-such-session"), std::string::npos) << s;
  proto::CloseSessionRequest close;
  close.set_session_handle("no-such-session");
  proto::CloseSessionResponse closed;
  EXPECT_TRUE(IsAborted(client_->CloseSession(nullptr, close, &closed)));
}

TEST_F(MasterTest, BadFeedsAndFetchesNameWhatIsWrong) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> outputs;
  Status s = Run(*handle, {{"x", Tensor::FromVector<int32_t>({1})}}, {"y"}, {}, &outputs);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s;
  s = Run(*handle, {{"x", Tensor::FromVector<float>({1})}, {"x", Tensor::FromVector<float>({1})}},
          {"y"}, {}, &outputs);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  s = Run(*handle, {}, {"no_such_node"}, {}, &outputs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no_such_node"), std::string::npos) << s;
}

TEST_F(MasterTest, CloseSessionDeletesTheWorkerSessions) {
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> outputs;
  ASSERT_TRUE(Run(*handle, {{"x", Tensor::FromVector<float>({1})}}, {"y"}, {}, &outputs).ok());
  proto::CloseSessionRequest close;
  close.set_session_handle(*handle);
  proto::CloseSessionResponse closed;
  ASSERT_TRUE(client_->CloseSession(nullptr, close, &closed).ok());
  EXPECT_EQ(counting_[0]->delete_worker_session, 1);
  EXPECT_EQ(counting_[1]->delete_worker_session, 1);
  EXPECT_EQ(counting_[0]->deregister_graph + counting_[1]->deregister_graph, 2);
  Status s = Run(*handle, {{"x", Tensor::FromVector<float>({1})}}, {"y"}, {}, &outputs);
  EXPECT_TRUE(IsAborted(s)) << s;
}

TEST_F(MasterTest, WorkerThatAnswersUnavailableFailsCreateSessionNamingIt) {
  counting_[1]->get_status_unavailable = true;
  auto handle = CreateSession(SpanningGraph());
  ASSERT_FALSE(handle.ok());
  EXPECT_TRUE(IsUnavailable(handle.status())) << handle.status();
  EXPECT_NE(handle.status().message().find(kTask1), std::string::npos) << handle.status();
  EXPECT_NE(handle.status().message().find("connection refused"), std::string::npos)
      << handle.status();
}

TEST_F(MasterTest, WorkerThatNeverAnswersFailsCreateSessionWithinTheTimeout) {
  master_.reset();
  master_env_.worker_ready_timeout_ms = 300;
  master_ = std::make_unique<Master>(&master_env_);
  client_ = NewLocalMaster(master_.get());
  counting_[1]->get_status_silent = true;
  auto start = Clock::now();
  auto handle = CreateSession(SpanningGraph());
  ASSERT_FALSE(handle.ok());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(IsUnavailable(handle.status())) << handle.status();
  EXPECT_NE(handle.status().message().find(kTask1), std::string::npos) << handle.status();
  EXPECT_NE(handle.status().message().find("300 ms"), std::string::npos) << handle.status();
}

TEST_F(MasterTest, CrossWorkerCollectivesAreUnimplemented) {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> fetches;
  for (int task = 0; task < 2; ++task) {
    Scope on = root.WithDevice(task == 0 ? kTask0 : kTask1);
    auto value = ops::Const(on.WithOpName("value" + std::to_string(task)), {1.0f, 2.0f});
    auto sum = ops::CollectiveAllReduce(on.WithOpName("sum" + std::to_string(task)), {value},
                                        {.group_size = 2, .group_key = 1, .instance_key = 1});
    ASSERT_EQ(sum.size(), 1u);
    fetches.push_back(sum[0].name());
  }
  ASSERT_TRUE(root.status().ok()) << root.status();
  auto handle = CreateSession(root.ToGraphDef().value());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> outputs;
  Status s = Run(*handle, {}, fetches, {}, &outputs);
  EXPECT_TRUE(IsUnimplemented(s)) << s;
  EXPECT_NE(s.message().find("sum"), std::string::npos) << s;
}

// Each session has a variable on task 1 of its own; reads come back through task 0.
TEST_F(MasterTest, ConcurrentSessionsKeepTheirOwnVariables) {
  Scope root = Scope::NewRootScope();
  auto handle_node =
      ops::VarHandleOp(root.WithOpName("v").WithDevice(kTask1), DataType::kFloat, PartialShape({}));
  auto init_value =
      ops::Placeholder(root.WithOpName("init_value"), DataType::kFloat, PartialShape({}));
  ops::AssignVariableOp(root.WithOpName("init"), handle_node, init_value);
  auto read = ops::ReadVariableOp(root.WithOpName("read"), handle_node);
  ops::Mul(root.WithOpName("twice").WithDevice(kTask0), read, 2.0f);
  const proto::GraphDef graph = root.ToGraphDef().value();

  constexpr int kSessions = 8;
  std::vector<std::string> handles(kSessions);
  for (int i = 0; i < kSessions; ++i) {
    auto handle = CreateSession(graph);
    ASSERT_TRUE(handle.ok()) << handle.status();
    handles[i] = *handle;
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      std::vector<Tensor> outputs;
      float value = static_cast<float>(i + 1);
      if (!Run(handles[i], {{"init_value", Tensor::Scalar<float>(value)}}, {}, {"init"}, &outputs)
               .ok()) {
        ++failures;
        return;
      }
      for (int step = 0; step < 5; ++step) {
        Status s = Run(handles[i], {}, {"twice"}, {}, &outputs);
        if (!s.ok() || outputs[0].flat<float>()[0] != 2 * value) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace weft
