// The fixture of the master tests: two real in-process Workers (job "worker", tasks 0 and 1) behind
// CountingWorkers, joined by a local worker cache, and a Master on task 0 driven through
// NewLocalMaster. A CallSignal lets a test wait for calls to arrive instead of sleeping. For tests
// only.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/mutex.h"
#include "weft/core/timer.h"
#include "weft/distributed/collective/distributed_collective_executor_mgr.h"
#include "weft/distributed/master/local_master.h"
#include "weft/distributed/master/master.h"
#include "weft/distributed/worker/local_worker_cache.h"
#include "weft/distributed/worker/worker.h"
#include "weft/framework/tensor_proto_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/cpu_device.h"

namespace weft::testing {

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";

using Clock = std::chrono::steady_clock;

// Wakes a test whenever a counted call arrives, so that it waits for calls instead of sleeping.
class CallSignal {
 public:
  void Notify() {
    MutexLock lock(mu_);
    changed_.NotifyAll();
  }
  // Waits until `done()` holds (checked under the lock after each call), at most `timeout`.
  bool WaitUntil(const std::function<bool()>& done,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = Clock::now() + timeout;
    MutexLock lock(mu_);
    while (!done()) {
      if (!changed_.WaitUntil(lock, deadline)) return done();
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar changed_;
};

// Forwards to a real worker, counting calls (and telling `signal` of each); can also play a worker
// that never comes up, one whose RunGraph never ends on its own, or one that has stopped answering
// altogether (such calls answer Cancelled only when cancelled).
class CountingWorker final : public WorkerInterface {
 public:
  CountingWorker(WorkerInterface* base, CallSignal* signal) : base_(base), signal_(signal) {}

  std::atomic<int> get_status{0};
  std::atomic<int> register_graph{0};
  std::atomic<int> cleanup_graph{0};
  std::atomic<int> run_graph{0};
  std::atomic<int> deregister_graph{0};
  std::atomic<int> delete_worker_session{0};
  std::atomic<bool> get_status_unavailable{false};
  std::atomic<bool> get_status_silent{false};
  std::atomic<bool> run_graph_hangs{false};
  std::atomic<bool> set_up_silent{false};  // session, graph and cleanup calls

  void GetStatusAsync(CallOptions* options, const proto::GetStatusRequest* request,
                      proto::GetStatusResponse* response, StatusCallback done) override {
    if (get_status_unavailable) return done(Unavailable("connection refused"));
    ++get_status;
    signal_->Notify();
    if (get_status_silent) return AnswerOnlyWhenCancelledAsync(options, std::move(done));
    base_->GetStatusAsync(options, request, response, std::move(done));
  }
  void CreateWorkerSessionAsync(CallOptions* options,
                                const proto::CreateWorkerSessionRequest* request,
                                proto::CreateWorkerSessionResponse* response,
                                StatusCallback done) override {
    if (set_up_silent) return AnswerOnlyWhenCancelledAsync(options, std::move(done));
    base_->CreateWorkerSessionAsync(options, request, response, std::move(done));
  }
  void DeleteWorkerSessionAsync(CallOptions* options,
                                const proto::DeleteWorkerSessionRequest* request,
                                proto::DeleteWorkerSessionResponse* response,
                                StatusCallback done) override {
    ++delete_worker_session;
    signal_->Notify();
    if (set_up_silent) return AnswerOnlyWhenCancelledAsync(options, std::move(done));
    base_->DeleteWorkerSessionAsync(options, request, response, std::move(done));
  }
  void RegisterGraphAsync(CallOptions* options, const proto::RegisterGraphRequest* request,
                          proto::RegisterGraphResponse* response, StatusCallback done) override {
    ++register_graph;
    signal_->Notify();
    if (set_up_silent) return AnswerOnlyWhenCancelledAsync(options, std::move(done));
    base_->RegisterGraphAsync(options, request, response, std::move(done));
  }
  void DeregisterGraphAsync(CallOptions* options, const proto::DeregisterGraphRequest* request,
                            proto::DeregisterGraphResponse* response,
                            StatusCallback done) override {
    ++deregister_graph;
    signal_->Notify();
    if (set_up_silent) return AnswerOnlyWhenCancelledAsync(options, std::move(done));
    base_->DeregisterGraphAsync(options, request, response, std::move(done));
  }
  void RunGraphAsync(CallOptions* options, const proto::RunGraphRequest* request,
                     proto::RunGraphResponse* response, StatusCallback done) override {
    ++run_graph;
    signal_->Notify();
    if (run_graph_hangs) return AnswerOnlyWhenCancelledAsync(options, std::move(done));
    base_->RunGraphAsync(options, request, response, std::move(done));
  }
  void CleanupGraphAsync(CallOptions* options, const proto::CleanupGraphRequest* request,
                         proto::CleanupGraphResponse* response, StatusCallback done) override {
    ++cleanup_graph;
    signal_->Notify();
    if (set_up_silent) return AnswerOnlyWhenCancelledAsync(options, std::move(done));
    base_->CleanupGraphAsync(options, request, response, std::move(done));
  }
  void RecvTensorAsync(CallOptions* options, const proto::RecvTensorRequest* request,
                       TensorResponse* response, StatusCallback done) override {
    base_->RecvTensorAsync(options, request, response, std::move(done));
  }

 private:
  // Answers `done` once, then lets it go: a call's state often owns the CallOptions that hold the
  // cancel callback holding `done`, and only dropping `done` breaks that cycle.
  class SilentCall {
   public:
    explicit SilentCall(StatusCallback done) : done_(std::move(done)) {}
    void Answer(const Status& status) {
      StatusCallback done;
      {
        MutexLock lock(mu_);
        done = std::move(done_);
        done_ = nullptr;
      }
      if (done) done(status);
    }

   private:
    Mutex mu_;
    StatusCallback done_ WEFT_GUARDED_BY(mu_);
  };

  // What a transport does for a peer that never answers: Cancelled when the caller cancels,
  // DeadlineExceeded at the call's deadline, whichever comes first.
  void AnswerOnlyWhenCancelledAsync(CallOptions* options, StatusCallback done) {
    auto call = std::make_shared<SilentCall>(std::move(done));
    if (options->timeout_ms() > 0) {
      const int64_t timeout_ms = options->timeout_ms();
      deadlines_.Schedule(timeout_ms, [call, timeout_ms] {
        call->Answer(DeadlineExceeded("no answer within ", timeout_ms, " ms"));
      });
    }
    options->SetCancelCallback([call] { call->Answer(Cancelled("call cancelled")); });
  }
  WorkerInterface* const base_;
  CallSignal* const signal_;
  Timer deadlines_;
};

// Two worker tasks and a master on task 0. Members are destroyed in reverse order: the master
// first, the workers last.
class MasterTest : public ::testing::Test {
 protected:
  void SetUp() override { StartCluster(); }

  void StartCluster(int64_t worker_timeout_ms = 10'000) {
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
      env->collective_mgr_factory = [name](const std::string& session_handle,
                                           WorkerCacheInterface* cache) {
        return NewWorkerSessionCollectives(name, session_handle, cache);
      };
      worker_envs_.push_back(std::move(env));
      workers_.push_back(std::make_unique<Worker>(worker_envs_.back().get()));
      counting_.push_back(std::make_unique<CountingWorker>(workers_.back().get(), &signal_));
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
    master_env_.worker_timeout_ms = worker_timeout_ms;
    master_ = std::make_unique<Master>(&master_env_);
    client_ = NewLocalMaster(master_.get());
  }

  // A new Master (sessions of the old one are gone) whose worker timeout is `worker_timeout_ms`.
  void RestartMaster(int64_t worker_timeout_ms) {
    client_.reset();
    master_.reset();
    master_env_.worker_timeout_ms = worker_timeout_ms;
    master_ = std::make_unique<Master>(&master_env_);
    client_ = NewLocalMaster(master_.get());
  }

  StatusOr<std::string> CreateSession(const proto::GraphDef& graph, int64_t timeout_ms = 20'000,
                                      proto::ConfigProto config = {}) {
    proto::CreateSessionRequest request;
    *request.mutable_graph_def() = graph;
    *request.mutable_config() = std::move(config);
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

  Status CloseSession(const std::string& handle) {
    proto::CloseSessionRequest request;
    request.set_session_handle(handle);
    proto::CloseSessionResponse response;
    return client_->CloseSession(nullptr, request, &response);
  }

  int TotalRegistrations() const {
    return counting_[0]->register_graph + counting_[1]->register_graph;
  }
  int TotalCleanups() const { return counting_[0]->cleanup_graph + counting_[1]->cleanup_graph; }

  // Waits (bounded) for asynchronous cleanups to reach `count`.
  bool WaitForCleanups(int count) {
    return signal_.WaitUntil([&] { return TotalCleanups() >= count; });
  }
  // Waits (bounded) until task `task` has received `count` RunGraph calls.
  bool WaitForRunGraphs(int task, int count) {
    return signal_.WaitUntil([&] { return counting_[task]->run_graph >= count; });
  }

  // Declared first, destroyed last: the workers tell it of their calls.
  CallSignal signal_;
  std::vector<std::unique_ptr<DeviceMgr>> device_mgrs_;
  std::vector<std::unique_ptr<ThreadPool>> compute_pools_;
  std::vector<std::unique_ptr<WorkerEnv>> worker_envs_;
  // The caches and CountingWorkers outlive the workers: a step the client has already been
  // answered for (cancelled, abandoned) still sends its cleanup through them when it ends, and a
  // Worker's destructor waits for its steps.
  std::vector<std::unique_ptr<CountingWorker>> counting_;
  std::unique_ptr<WorkerCacheInterface> peer_cache_;
  std::unique_ptr<WorkerCacheInterface> master_cache_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<ThreadPool> master_pool_;
  MasterEnv master_env_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<MasterInterface> client_;
};

// x (fed, task 0) -> square on task 1 -> plus one on task 0; u (fed on task 1) -> neg on task 1.
inline proto::GraphDef SpanningGraph() {
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

}  // namespace weft::testing
