// The master over two real in-process Workers (job "worker", tasks 0 and 1) joined by a local
// worker cache, driven through NewLocalMaster: graphs spanning both tasks, registration caching,
// errors of one task reaching the client with the task named, deadlines, workers that never come
// up, unknown sessions, concurrent sessions, and CleanupGraph after every step.
#include "weft/distributed/master/master.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "weft/distributed/testing/master_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

using testing::Clock;
using testing::kTask0;
using testing::kTask1;
using testing::MasterTest;
using testing::SpanningGraph;

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
    // Once the step is running on task 1 (where it hangs).
    EXPECT_TRUE(WaitForRunGraphs(1, 1));
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
  ASSERT_TRUE(WaitForRunGraphs(1, 1));  // the step is running (and hangs on task 1)
  const auto start = Clock::now();
  EXPECT_TRUE(CloseSession(*handle).ok());
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
  RestartMaster(300);
  counting_[1]->get_status_silent = true;
  auto start = Clock::now();
  auto handle = CreateSession(SpanningGraph());
  ASSERT_FALSE(handle.ok());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(IsUnavailable(handle.status())) << handle.status();
  EXPECT_NE(handle.status().message().find(kTask1), std::string::npos) << handle.status();
  EXPECT_NE(handle.status().message().find("300 ms"), std::string::npos) << handle.status();
}

// In-graph replication across tasks: each task's member of the group all-reduces through the
// workers' collectives, in every session of its own (the groups of one session never meet
// another's, and a closed session's groups are forgotten by the leader).
TEST_F(MasterTest, CollectivesAcrossTasksAllReduceInEachSession) {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> fetches;
  for (int task = 0; task < 2; ++task) {
    Scope on = root.WithDevice(task == 0 ? kTask0 : kTask1);
    auto value =
        ops::Const(on.WithOpName("value" + std::to_string(task)), {1.0f + task, 2.0f + 10 * task});
    auto sum = ops::CollectiveAllReduce(on.WithOpName("sum" + std::to_string(task)), {value},
                                        {.group_size = 2, .group_key = 1, .instance_key = 1});
    ASSERT_EQ(sum.size(), 1u);
    fetches.push_back(sum[0].name());
  }
  ASSERT_TRUE(root.status().ok()) << root.status();
  for (int session = 0; session < 2; ++session) {
    auto handle = CreateSession(root.ToGraphDef().value());
    ASSERT_TRUE(handle.ok()) << handle.status();
    for (int step = 0; step < 2; ++step) {
      std::vector<Tensor> outputs;
      Status s = Run(*handle, {}, fetches, {}, &outputs);
      ASSERT_TRUE(s.ok()) << "session " << session << " step " << step << ": " << s;
      ASSERT_EQ(outputs.size(), 2u);
      for (const Tensor& sum : outputs) {
        EXPECT_EQ(sum.flat<float>()[0], 3.0f);
        EXPECT_EQ(sum.flat<float>()[1], 14.0f);
      }
    }
    ASSERT_TRUE(CloseSession(*handle).ok());
  }
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

// The parameter-server layout: sessions that share the tasks' state see one variable on task 1;
// each session's filter sends its unplaced nodes to its own task.
TEST_F(MasterTest, SessionsSharingStateSeeOneVariableAndFiltersPickTheirTasks) {
  Scope root = Scope::NewRootScope();
  auto handle_node = ops::VarHandleOp(root.WithOpName("shared_v").WithDevice(kTask1),
                                      DataType::kFloat, PartialShape({}));
  ops::AssignVariableOp(root.WithOpName("init"), handle_node, ops::Const(root, 3.0f));
  ops::AssignAddVariableOp(root.WithOpName("add_one"), handle_node, ops::Const(root, 1.0f));
  auto read = ops::ReadVariableOp(root.WithOpName("read"), handle_node);
  ops::Mul(root.WithOpName("twice"), read, 2.0f);  // unplaced: the session's first task
  const proto::GraphDef graph = root.ToGraphDef().value();

  proto::ConfigProto on_task0;
  on_task0.set_share_session_state(true);
  on_task0.add_device_filters("/job:worker/task:0");
  on_task0.add_device_filters("/job:worker/task:1");
  proto::ConfigProto on_task1 = on_task0;
  on_task1.clear_device_filters();
  on_task1.add_device_filters("/job:worker/replica:0/task:1");
  auto first = CreateSession(graph, 20'000, on_task0);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = CreateSession(graph, 20'000, on_task1);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(counting_[0]->delete_worker_session, 0);

  std::vector<Tensor> outputs;
  ASSERT_TRUE(Run(*first, {}, {}, {"init"}, &outputs).ok());
  ASSERT_TRUE(Run(*second, {}, {}, {"add_one"}, &outputs).ok());
  const int task0_runs = counting_[0]->run_graph;
  ASSERT_TRUE(Run(*second, {}, {"twice"}, {}, &outputs).ok());
  EXPECT_TENSOR_EQ(outputs[0], Tensor::Scalar<float>(8));
  EXPECT_EQ(counting_[0]->run_graph, task0_runs);  // the second session never uses task 0
  ASSERT_TRUE(Run(*first, {}, {"twice"}, {}, &outputs).ok());
  EXPECT_TENSOR_EQ(outputs[0], Tensor::Scalar<float>(8));
  EXPECT_GT(counting_[0]->run_graph, task0_runs);

  // Closing a sharing session leaves the variable to the others.
  proto::CloseSessionRequest close;
  close.set_session_handle(*first);
  proto::CloseSessionResponse closed;
  ASSERT_TRUE(client_->CloseSession(nullptr, close, &closed).ok());
  ASSERT_TRUE(Run(*second, {}, {"read"}, {}, &outputs).ok());
  EXPECT_TENSOR_EQ(outputs[0], Tensor::Scalar<float>(4));
}

TEST_F(MasterTest, DeviceFiltersThatMatchNothingOrNameADeviceAreRefused) {
  proto::ConfigProto config;
  config.add_device_filters("/job:ps");
  auto session = CreateSession(SpanningGraph(), 20'000, config);
  ASSERT_FALSE(session.ok());
  EXPECT_TRUE(IsInvalidArgument(session.status())) << session.status();
  EXPECT_NE(session.status().message().find("'/job:ps' matches none"), std::string::npos);
  EXPECT_NE(session.status().message().find(kTask1), std::string::npos);
  config.set_device_filters(0, "/job:worker/task:0/device:CPU:0");
  session = CreateSession(SpanningGraph(), 20'000, config);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("names a device"), std::string::npos);
  config.set_device_filters(0, "/job:worker/task:x");
  session = CreateSession(SpanningGraph(), 20'000, config);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("device filter"), std::string::npos);
}

}  // namespace
}  // namespace weft
