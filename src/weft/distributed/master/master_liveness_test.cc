// Deadlines and liveness in the master: a worker that stops answering (it takes calls and never
// replies) fails the running step, graph registration, session creation and Close within the
// worker timeout, with an error naming the worker and its address; the session's config can set
// its own timeout; the default is 30 s.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "weft/distributed/master/master_session.h"
#include "weft/distributed/server.h"
#include "weft/distributed/testing/master_test_util.h"

namespace weft {
namespace {

using testing::Clock;
using testing::kTask1;
using testing::MasterTest;
using testing::SpanningGraph;

constexpr int64_t kShortTimeoutMs = 400;

void ExpectNamesSilentTask(const Status& status) {
  EXPECT_TRUE(IsDeadlineExceeded(status) || IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find(kTask1), std::string::npos) << status;
  EXPECT_NE(status.message().find("in-process"), std::string::npos) << status;  // the address
}

TEST(MasterWorkerTimeoutTest, DefaultIsThirtySeconds) {
  EXPECT_EQ(MasterEnv().worker_timeout_ms, 30'000);
  EXPECT_EQ(MasterSession::Options().worker_timeout_ms, 30'000);
  EXPECT_EQ(ServerOptions().worker_timeout_ms, 30'000);
}

TEST_F(MasterTest, SilentWorkerFailsTheRunningStepAndCloseNamingIt) {
  RestartMaster(kShortTimeoutMs);
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> outputs;
  ASSERT_TRUE(Run(*handle, {{"x", Tensor::FromVector<float>({1})}}, {"y"}, {}, &outputs).ok());

  // Task 1 stops answering anything; the step has no deadline of its own beyond 20 s.
  counting_[1]->run_graph_hangs = true;
  counting_[1]->get_status_silent = true;
  counting_[1]->set_up_silent = true;
  auto start = Clock::now();
  Status step = Run(*handle, {{"x", Tensor::FromVector<float>({2})}}, {"y"}, {}, &outputs);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  ExpectNamesSilentTask(step);
  EXPECT_NE(step.message().find("stopped answering"), std::string::npos) << step;

  start = Clock::now();
  Status closed = CloseSession(*handle);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  ExpectNamesSilentTask(closed);
  // A worker that did not answer the deregistration is not asked to delete its session.
  EXPECT_EQ(counting_[1]->delete_worker_session, 0);
  EXPECT_EQ(counting_[0]->delete_worker_session, 1);

  // Once it answers again, new sessions work.
  counting_[1]->run_graph_hangs = false;
  counting_[1]->get_status_silent = false;
  counting_[1]->set_up_silent = false;
  auto again = CreateSession(SpanningGraph());
  ASSERT_TRUE(again.ok()) << again.status();
  Status s = Run(*again, {{"x", Tensor::FromVector<float>({3})}}, {"y"}, {}, &outputs);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(outputs[0].flat<float>()[0], 10.0f);
}

TEST_F(MasterTest, HungStepIsProbedAndStillEndsOnClose) {
  RestartMaster(kShortTimeoutMs);
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  const int after_create = counting_[1]->get_status;
  // A step that hangs on task 1 gets probes (the worker still answers them) and no error.
  counting_[1]->run_graph_hangs = true;
  Status step_status;
  std::thread step([&] {
    std::vector<Tensor> outputs;
    step_status = Run(*handle, {{"x", Tensor::FromVector<float>({1})}}, {"y"}, {}, &outputs);
  });
  EXPECT_TRUE(signal_.WaitUntil([&] { return counting_[1]->get_status >= after_create + 3; }));
  EXPECT_TRUE(CloseSession(*handle).ok());
  step.join();
  EXPECT_TRUE(IsCancelled(step_status)) << step_status;
  counting_[1]->run_graph_hangs = false;
}

TEST_F(MasterTest, SilentWorkerFailsRegistrationWithinTheTimeout) {
  RestartMaster(kShortTimeoutMs);
  auto handle = CreateSession(SpanningGraph());
  ASSERT_TRUE(handle.ok()) << handle.status();
  counting_[1]->set_up_silent = true;
  std::vector<Tensor> outputs;
  const auto start = Clock::now();
  Status s = Run(*handle, {{"x", Tensor::FromVector<float>({1})}}, {"y"}, {}, &outputs);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  ExpectNamesSilentTask(s);
  counting_[1]->set_up_silent = false;
}

TEST_F(MasterTest, SilentWorkerFailsCreateSessionWithinTheSessionsOwnTimeout) {
  counting_[1]->set_up_silent = true;
  proto::CreateSessionRequest request;
  *request.mutable_graph_def() = SpanningGraph();
  request.mutable_config()->set_worker_timeout_in_ms(kShortTimeoutMs);  // the master says 10 s
  proto::CreateSessionResponse response;
  const auto start = Clock::now();
  Status s = client_->CreateSession(nullptr, request, &response);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  ExpectNamesSilentTask(s);
  counting_[1]->set_up_silent = false;
}

TEST_F(MasterTest, LocalMasterCallsStopWaitingAtTheirDeadline) {
  RestartMaster(kShortTimeoutMs);
  counting_[1]->set_up_silent = true;
  proto::CreateSessionRequest request;
  *request.mutable_graph_def() = SpanningGraph();
  proto::CreateSessionResponse response;
  CallOptions options;
  options.set_timeout_ms(100);  // the master itself waits longer for task 1
  const auto start = Clock::now();
  Status s = client_->CreateSession(&options, request, &response);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(IsDeadlineExceeded(s)) << s;
  EXPECT_NE(s.message().find("CreateSession"), std::string::npos) << s;
  counting_[1]->set_up_silent = false;
}

}  // namespace
}  // namespace weft
