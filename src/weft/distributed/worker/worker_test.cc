// Two in-process Workers (tasks 0 and 1 of job "worker") joined by a local worker cache: steps
// whose tensors cross workers, RecvTensor racing RunGraph, concurrent steps, session isolation,
// and every error path of the WorkerService.
#include "weft/distributed/worker/worker.h"

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/distributed/worker/local_worker_cache.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/rendezvous.h"
#include "weft/framework/tensor_proto_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/graph_def_io.h"
#include "weft/graph/partition.h"
#include "weft/graph/placer.h"
#include "weft/graph/prune.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

constexpr char kTask0[] = "/job:worker/replica:0/task:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";
constexpr char kCpu0[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:worker/replica:0/task:1/device:CPU:0";
constexpr auto kTimeout = std::chrono::seconds(20);

// One asynchronous call's outcome.
struct Pending {
  Notification done;
  Status status;
  StatusCallback Callback() {
    return [this](const Status& s) {
      status = s;
      done.Notify();
    };
  }
  bool Wait(std::chrono::milliseconds timeout = kTimeout) {
    return done.WaitForNotificationWithTimeout(timeout);
  }
};

bool Contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

class TwoWorkers {
 public:
  TwoWorkers() {
    proto::ConfigProto config;
    const char* tasks[] = {kTask0, kTask1};
    for (int i = 0; i < 2; ++i) {
      devices_[i] = CreateLocalDevices(config, 1, "worker", i).value();
      pools_[i] = std::make_unique<ThreadPool>("compute", 4);
      envs_[i].task_name = tasks[i];
      envs_[i].devices = devices_[i].get();
      envs_[i].op_registry = &ops::AllOps();
      envs_[i].kernel_registry = &kernels::AllKernels();
      envs_[i].compute_pool = pools_[i].get();
      workers_[i] = std::make_unique<Worker>(&envs_[i]);
    }
    cache_ = NewLocalWorkerCache({{kTask0, workers_[0].get()}, {kTask1, workers_[1].get()}});
    for (auto& env : envs_) env.worker_cache = cache_.get();
  }

  Worker& worker(int i) { return *workers_[i]; }
  WorkerEnv& env(int i) { return envs_[i]; }
  const DeviceMgr& devices(int i) const { return *devices_[i]; }

  uint64_t Incarnation(const std::string& device) const {
    for (const auto& mgr : devices_) {
      for (const Device* d : mgr->ListDevices()) {
        if (d->name() == device) return d->incarnation();
      }
    }
    return 0;
  }

  Status CreateSession(int i, const std::string& handle) {
    proto::CreateWorkerSessionRequest request;
    request.set_session_handle(handle);
    proto::CreateWorkerSessionResponse response;
    return workers_[i]->CreateWorkerSession(nullptr, request, &response);
  }

 private:
  // Workers go first: they wait for their steps, which use the pools and the devices.
  std::array<std::unique_ptr<DeviceMgr>, 2> devices_;
  std::array<std::unique_ptr<ThreadPool>, 2> pools_;
  std::array<WorkerEnv, 2> envs_;
  std::unique_ptr<WorkerCacheInterface> cache_;
  std::array<std::unique_ptr<Worker>, 2> workers_;
};

// Places `graph_def` over both workers' CPUs, builds the step for (feeds, fetches, targets) and
// splits it into one RegisterGraphRequest per task (feeds and fetches go to task 0).
std::array<proto::RegisterGraphRequest, 2> PartitionForTasks(
    const TwoWorkers& cluster, const proto::GraphDef& graph_def, const std::string& session,
    std::vector<std::string> feeds, std::vector<std::string> fetches,
    std::vector<std::string> targets = {}) {
  Graph graph(ops::AllOps());
  EXPECT_TRUE(ImportGraphDef(graph_def, &graph).ok());
  StepSignature signature{feeds, fetches, targets};
  auto step = BuildStepGraph(graph, signature);
  EXPECT_TRUE(step.ok()) << step.status();
  Placer placer(step->get(), {{kCpu0, "CPU"}, {kCpu1, "CPU"}}, 0, &kernels::AllKernels());
  Status placed = placer.Run();
  EXPECT_TRUE(placed.ok()) << placed;
  PartitionOptions options;
  options.get_incarnation = [&cluster](const std::string& device) {
    return cluster.Incarnation(device);
  };
  std::map<std::string, proto::GraphDef> partitions;
  Status partitioned = Partition(options, **step, &partitions);
  EXPECT_TRUE(partitioned.ok()) << partitioned;
  std::array<proto::RegisterGraphRequest, 2> requests;
  for (int i = 0; i < 2; ++i) requests[i].set_session_handle(session);
  for (const std::string& feed : feeds) requests[0].add_feed(feed);
  for (const std::string& fetch : fetches) requests[0].add_fetch(fetch);
  for (auto& [device, partition_graph] : partitions) {
    proto::DevicePartition* partition = requests[device == kCpu0 ? 0 : 1].add_partition();
    partition->set_device(device);
    *partition->mutable_graph_def() = partition_graph;
  }
  return requests;
}

// y = x (fed on task 0) + c (a constant on task 1), computed on task 0: c crosses workers.
proto::GraphDef CrossGraph() {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x").WithDevice(kCpu0), DataType::kFloat);
  auto c = ops::Const(root.WithOpName("c").WithDevice(kCpu1), Tensor::FromVector<float>({1, 2}));
  ops::Add(root.WithOpName("y").WithDevice(kCpu0), x, c);
  return root.ToGraphDef().value();
}

// Like CrossGraph, but task 1 adds the value of a variable nobody initialized, which fails.
proto::GraphDef FailingCrossGraph() {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x").WithDevice(kCpu0), DataType::kFloat);
  auto never_set = ops::VarHandleOp(root.WithOpName("never_set").WithDevice(kCpu1),
                                    DataType::kFloat, PartialShape({2}));
  auto read = ops::ReadVariableOp(root.WithOpName("bad_read").WithDevice(kCpu1), never_set);
  ops::Add(root.WithOpName("y").WithDevice(kCpu0), x, read);
  return root.ToGraphDef().value();
}

// The rendezvous key of the one tensor task 1 sends to task 0.
std::string CrossKey(const proto::RegisterGraphRequest& task1) {
  for (const auto& node : task1.partition(0).graph_def().node()) {
    if (node.op() != "_Send") continue;
    std::string name, send_device, recv_device;
    int64_t incarnation = 0;
    EXPECT_TRUE(GetNodeAttr(node, "tensor_name", &name).ok());
    EXPECT_TRUE(GetNodeAttr(node, "send_device", &send_device).ok());
    EXPECT_TRUE(GetNodeAttr(node, "recv_device", &recv_device).ok());
    EXPECT_TRUE(GetNodeAttr(node, "send_device_incarnation", &incarnation).ok());
    return Rendezvous::CreateKey(send_device, static_cast<uint64_t>(incarnation), recv_device, name,
                                 {});
  }
  ADD_FAILURE() << "no _Send on task 1";
  return "";
}

// A registered cross-worker graph on both workers.
struct Registered {
  std::array<proto::RegisterGraphRequest, 2> requests;
  std::array<std::string, 2> handles;
};

Registered Register(TwoWorkers& cluster, const proto::GraphDef& graph, const std::string& session) {
  Registered registered;
  registered.requests = PartitionForTasks(cluster, graph, session, {"x:0"}, {"y:0"});
  for (int i = 0; i < 2; ++i) {
    proto::RegisterGraphResponse response;
    Status s = cluster.worker(i).RegisterGraph(nullptr, registered.requests[i], &response);
    EXPECT_TRUE(s.ok()) << s;
    registered.handles[i] = response.graph_handle();
  }
  return registered;
}

proto::RunGraphRequest RunRequest(const std::string& session, const std::string& handle,
                                  int64_t step_id,
                                  std::vector<std::pair<std::string, Tensor>> sends) {
  proto::RunGraphRequest request;
  request.set_session_handle(session);
  request.set_graph_handle(handle);
  request.set_step_id(step_id);
  for (auto& [name, value] : sends) {
    proto::NamedTensorProto* send = request.add_send();
    send->set_name(name);
    *send->mutable_tensor() = ToProto(value);
  }
  return request;
}

// RunGraph on both workers at once; returns both statuses (task 0's response in `response0`).
struct StepRun {
  proto::RunGraphRequest requests[2];
  proto::RunGraphResponse responses[2];
  CallOptions options[2];
  Pending pending[2];
};

void StartStep(TwoWorkers& cluster, const Registered& registered, const std::string& session,
               int64_t step_id, const Tensor& x, StepRun* run) {
  run->requests[0] = RunRequest(session, registered.handles[0], step_id, {{"x:0", x}});
  run->requests[1] = RunRequest(session, registered.handles[1], step_id, {});
  for (int i = 0; i < 2; ++i) {
    cluster.worker(i).RunGraphAsync(&run->options[i], &run->requests[i], &run->responses[i],
                                    run->pending[i].Callback());
  }
}

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.CreateSession(0, "s").ok());
    ASSERT_TRUE(cluster_.CreateSession(1, "s").ok());
  }
  TwoWorkers cluster_;
};

TEST_F(WorkerTest, GetStatusListsTheDevices) {
  proto::GetStatusResponse response;
  ASSERT_TRUE(cluster_.worker(1).GetStatus(nullptr, {}, &response).ok());
  EXPECT_EQ(response.task_name(), kTask1);
  ASSERT_EQ(response.device_attributes_size(), 1);
  EXPECT_EQ(response.device_attributes(0).name(), kCpu1);
  EXPECT_EQ(response.device_attributes(0).device_type(), "CPU");
  EXPECT_EQ(response.device_attributes(0).incarnation(), cluster_.Incarnation(kCpu1));
}

TEST_F(WorkerTest, StepCrossesWorkers) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  StepRun run;
  StartStep(cluster_, registered, "s", 1, Tensor::FromVector<float>({10, 20}), &run);
  for (auto& pending : run.pending) {
    ASSERT_TRUE(pending.Wait());
    ASSERT_TRUE(pending.status.ok()) << pending.status;
  }
  ASSERT_EQ(run.responses[0].recv_size(), 1);
  EXPECT_EQ(run.responses[0].recv(0).name(), "y:0");
  EXPECT_TENSOR_EQ(TensorFromProto(run.responses[0].recv(0).tensor()).value(),
                   Tensor::FromVector<float>({11, 22}));
  EXPECT_EQ(run.responses[1].recv_size(), 0);
  for (int i = 0; i < 2; ++i) {
    proto::CleanupGraphRequest cleanup;
    cleanup.set_step_id(1);
    proto::CleanupGraphResponse response;
    EXPECT_TRUE(cluster_.worker(i).CleanupGraph(nullptr, cleanup, &response).ok());
  }
}

TEST_F(WorkerTest, CollectsStepStats) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  StepRun run;
  run.requests[0] =
      RunRequest("s", registered.handles[0], 2, {{"x:0", Tensor::FromVector<float>({1, 1})}});
  run.requests[0].set_collect_step_stats(true);
  run.requests[1] = RunRequest("s", registered.handles[1], 2, {});
  for (int i = 0; i < 2; ++i) {
    cluster_.worker(i).RunGraphAsync(&run.options[i], &run.requests[i], &run.responses[i],
                                     run.pending[i].Callback());
  }
  for (auto& pending : run.pending) ASSERT_TRUE(pending.Wait() && pending.status.ok());
  ASSERT_GT(run.responses[0].step_stats().dev_stats_size(), 0);
  EXPECT_EQ(run.responses[0].step_stats().dev_stats(0).device(), kCpu0);
}

TEST_F(WorkerTest, ConsumerStartsBeforeProducer) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  StepRun run;
  run.requests[0] =
      RunRequest("s", registered.handles[0], 3, {{"x:0", Tensor::FromVector<float>({5, 5})}});
  run.requests[1] = RunRequest("s", registered.handles[1], 3, {});
  // Task 0's RecvTensor reaches task 1 before task 1 knows of the step.
  cluster_.worker(0).RunGraphAsync(&run.options[0], &run.requests[0], &run.responses[0],
                                   run.pending[0].Callback());
  EXPECT_FALSE(run.pending[0].Wait(std::chrono::milliseconds(100)));
  cluster_.worker(1).RunGraphAsync(&run.options[1], &run.requests[1], &run.responses[1],
                                   run.pending[1].Callback());
  for (auto& pending : run.pending) {
    ASSERT_TRUE(pending.Wait());
    ASSERT_TRUE(pending.status.ok()) << pending.status;
  }
  EXPECT_TENSOR_EQ(TensorFromProto(run.responses[0].recv(0).tensor()).value(),
                   Tensor::FromVector<float>({6, 7}));
}

TEST_F(WorkerTest, RecvTensorBeforeRunGraphWaitsForTheSend) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  proto::RecvTensorRequest request;
  request.set_step_id(4);
  request.set_rendezvous_key(CrossKey(registered.requests[1]));
  TensorResponse response;
  CallOptions options;
  Pending recv;
  cluster_.worker(1).RecvTensorAsync(&options, &request, &response, recv.Callback());
  EXPECT_FALSE(recv.Wait(std::chrono::milliseconds(50)));
  auto run_request = RunRequest("s", registered.handles[1], 4, {});
  proto::RunGraphResponse run_response;
  Pending run;
  cluster_.worker(1).RunGraphAsync(nullptr, &run_request, &run_response, run.Callback());
  ASSERT_TRUE(recv.Wait());
  ASSERT_TRUE(recv.status.ok()) << recv.status;
  EXPECT_TENSOR_EQ(response.tensor, Tensor::FromVector<float>({1, 2}));
  ASSERT_TRUE(run.Wait());
  EXPECT_TRUE(run.status.ok()) << run.status;
}

TEST_F(WorkerTest, ConcurrentStepsStayApart) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  constexpr int kSteps = 8;
  std::vector<std::unique_ptr<StepRun>> runs;
  for (int i = 0; i < kSteps; ++i) {
    runs.push_back(std::make_unique<StepRun>());
    StartStep(cluster_, registered, "s", 100 + i,
              Tensor::FromVector<float>({static_cast<float>(i), 0}), runs.back().get());
  }
  for (int i = 0; i < kSteps; ++i) {
    for (auto& pending : runs[i]->pending) {
      ASSERT_TRUE(pending.Wait());
      ASSERT_TRUE(pending.status.ok()) << pending.status;
    }
    EXPECT_TENSOR_EQ(TensorFromProto(runs[i]->responses[0].recv(0).tensor()).value(),
                     Tensor::FromVector<float>({static_cast<float>(i) + 1, 2}));
  }
}

TEST_F(WorkerTest, FailingKernelOnPeerGivesTheRootCause) {
  Registered registered = Register(cluster_, FailingCrossGraph(), "s");
  StepRun run;
  StartStep(cluster_, registered, "s", 5, Tensor::FromVector<float>({1, 1, 1}), &run);
  for (auto& pending : run.pending) {
    ASSERT_TRUE(pending.Wait());
    EXPECT_TRUE(IsFailedPrecondition(pending.status)) << pending.status;
    EXPECT_TRUE(Contains(pending.status, "bad_read")) << pending.status;
  }
  EXPECT_TRUE(Contains(run.pending[0].status, kTask1)) << run.pending[0].status;
}

TEST_F(WorkerTest, CleanupGraphAbortsAWaitingStep) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  auto request =
      RunRequest("s", registered.handles[0], 6, {{"x:0", Tensor::FromVector<float>({1, 1})}});
  proto::RunGraphResponse response;
  CallOptions options;
  Pending run;
  cluster_.worker(0).RunGraphAsync(&options, &request, &response, run.Callback());
  EXPECT_FALSE(run.Wait(std::chrono::milliseconds(50)));  // waits for task 1, which never runs
  const auto start = std::chrono::steady_clock::now();
  proto::CleanupGraphRequest cleanup;
  cleanup.set_step_id(6);
  proto::CleanupGraphResponse cleanup_response;
  ASSERT_TRUE(cluster_.worker(0).CleanupGraph(nullptr, cleanup, &cleanup_response).ok());
  ASSERT_TRUE(run.Wait(std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(IsAborted(run.status)) << run.status;
  EXPECT_TRUE(Contains(run.status, "step 6 was cleaned up")) << run.status;
  // A late RecvTensor for the cleaned-up step does not wait for a step that is gone.
  proto::RecvTensorRequest recv_request;
  recv_request.set_step_id(6);
  recv_request.set_rendezvous_key(
      Rendezvous::CreateKey(kCpu0, cluster_.Incarnation(kCpu0), kCpu1, "anything", {}));
  TensorResponse recv_response;
  Status recv = cluster_.worker(0).RecvTensor(nullptr, recv_request, &recv_response);
  EXPECT_TRUE(IsAborted(recv)) << recv;
  // And so does a late RunGraph.
  Pending late;
  cluster_.worker(0).RunGraphAsync(nullptr, &request, &response, late.Callback());
  ASSERT_TRUE(late.Wait());
  EXPECT_TRUE(IsAborted(late.status)) << late.status;
}

TEST_F(WorkerTest, CancellingRunGraphAbortsTheStep) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  auto request =
      RunRequest("s", registered.handles[0], 7, {{"x:0", Tensor::FromVector<float>({1, 1})}});
  proto::RunGraphResponse response;
  CallOptions options;
  Pending run;
  cluster_.worker(0).RunGraphAsync(&options, &request, &response, run.Callback());
  EXPECT_FALSE(run.Wait(std::chrono::milliseconds(50)));
  options.StartCancel();
  ASSERT_TRUE(run.Wait(std::chrono::seconds(5)));
  EXPECT_TRUE(IsAborted(run.status)) << run.status;
}

TEST_F(WorkerTest, CancellingRecvTensorEndsOnlyThatWait) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  proto::RecvTensorRequest request;
  request.set_step_id(8);
  request.set_rendezvous_key(CrossKey(registered.requests[1]));
  TensorResponse response;
  CallOptions options;
  Pending recv;
  cluster_.worker(1).RecvTensorAsync(&options, &request, &response, recv.Callback());
  EXPECT_FALSE(recv.Wait(std::chrono::milliseconds(20)));
  options.StartCancel();
  ASSERT_TRUE(recv.Wait(std::chrono::seconds(5)));
  EXPECT_TRUE(IsCancelled(recv.status)) << recv.status;
  // The step itself is not aborted: it still runs.
  StepRun run;
  StartStep(cluster_, registered, "s", 8, Tensor::FromVector<float>({0, 0}), &run);
  for (auto& pending : run.pending) {
    ASSERT_TRUE(pending.Wait());
    EXPECT_TRUE(pending.status.ok()) << pending.status;
  }
}

TEST_F(WorkerTest, SessionsAreIsolated) {
  ASSERT_TRUE(cluster_.CreateSession(1, "other").ok());
  Scope root = Scope::NewRootScope();
  auto v =
      ops::VarHandleOp(root.WithOpName("v").WithDevice(kCpu1), DataType::kFloat, PartialShape({}));
  auto value = ops::Placeholder(root.WithOpName("value").WithDevice(kCpu1), DataType::kFloat);
  ops::AssignVariableOp(root.WithOpName("assign").WithDevice(kCpu1), v, value);
  ops::ReadVariableOp(root.WithOpName("read").WithDevice(kCpu1), v, DataType::kFloat);
  proto::GraphDef graph = root.ToGraphDef().value();

  // Everything lives on task 1; feeds and fetches are registered there.
  auto register_on_task1 = [&](const std::string& session, std::vector<std::string> feeds,
                               std::vector<std::string> fetches, std::vector<std::string> targets) {
    auto requests = PartitionForTasks(cluster_, graph, session, feeds, fetches, targets);
    proto::RegisterGraphRequest request = requests[1];
    for (const auto& feed : feeds) request.add_feed(feed);
    for (const auto& fetch : fetches) request.add_fetch(fetch);
    proto::RegisterGraphResponse response;
    Status s = cluster_.worker(1).RegisterGraph(nullptr, request, &response);
    EXPECT_TRUE(s.ok()) << s;
    return response.graph_handle();
  };
  int64_t step_id = 200;
  for (const auto& [session, number] :
       {std::pair<std::string, float>{"s", 1.0f}, {"other", 2.0f}}) {
    std::string assign = register_on_task1(session, {"value:0"}, {}, {"assign"});
    auto request =
        RunRequest(session, assign, step_id++, {{"value:0", Tensor::Scalar<float>(number)}});
    proto::RunGraphResponse response;
    Status s = cluster_.worker(1).RunGraph(nullptr, request, &response);
    ASSERT_TRUE(s.ok()) << s;
  }
  for (const auto& [session, number] :
       {std::pair<std::string, float>{"s", 1.0f}, {"other", 2.0f}}) {
    std::string read = register_on_task1(session, {}, {"read:0"}, {});
    auto request = RunRequest(session, read, step_id++, {});
    proto::RunGraphResponse response;
    Status s = cluster_.worker(1).RunGraph(nullptr, request, &response);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(response.recv_size(), 1);
    EXPECT_TENSOR_EQ(TensorFromProto(response.recv(0).tensor()).value(),
                     Tensor::Scalar<float>(number));
  }
}

TEST_F(WorkerTest, DeleteWorkerSessionAbortsItsStepsAndForgetsIt) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  auto request =
      RunRequest("s", registered.handles[0], 9, {{"x:0", Tensor::FromVector<float>({1, 1})}});
  proto::RunGraphResponse response;
  Pending run;
  cluster_.worker(0).RunGraphAsync(nullptr, &request, &response, run.Callback());
  EXPECT_FALSE(run.Wait(std::chrono::milliseconds(50)));
  proto::DeleteWorkerSessionRequest del;
  del.set_session_handle("s");
  proto::DeleteWorkerSessionResponse del_response;
  ASSERT_TRUE(cluster_.worker(0).DeleteWorkerSession(nullptr, del, &del_response).ok());
  ASSERT_TRUE(run.Wait(std::chrono::seconds(5)));
  EXPECT_TRUE(IsAborted(run.status)) << run.status;
  // Deleting again is fine; running again names the missing session.
  ASSERT_TRUE(cluster_.worker(0).DeleteWorkerSession(nullptr, del, &del_response).ok());
  auto again =
      RunRequest("s", registered.handles[0], 10, {{"x:0", Tensor::FromVector<float>({1, 1})}});
  Status s = cluster_.worker(0).RunGraph(nullptr, again, &response);
  EXPECT_TRUE(IsAborted(s)) << s;
  EXPECT_TRUE(Contains(s, "session 's'")) << s;
  EXPECT_TRUE(Contains(s, kTask0)) << s;
}

TEST_F(WorkerTest, CreateWorkerSessionErrors) {
  EXPECT_TRUE(IsInvalidArgument(cluster_.CreateSession(0, "")));
  Status duplicate = cluster_.CreateSession(0, "s");
  EXPECT_TRUE(IsAlreadyExists(duplicate)) << duplicate;
  // A cluster_def needs a factory for the session's own worker cache.
  proto::CreateWorkerSessionRequest request;
  request.set_session_handle("with_cluster");
  ClusterSpec cluster = ClusterSpec::FromFlag("worker=127.0.0.1:1,127.0.0.1:2").value();
  *request.mutable_config()->mutable_cluster_def() = cluster.ToProto();
  proto::CreateWorkerSessionResponse response;
  Status s = cluster_.worker(0).CreateWorkerSession(nullptr, request, &response);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  int factory_calls = 0;
  cluster_.env(0).worker_cache_factory =
      [&](const ClusterSpec& spec) -> StatusOr<std::unique_ptr<WorkerCacheInterface>> {
    ++factory_calls;
    EXPECT_EQ(spec.NumTasks("worker"), 2);
    return NewLocalWorkerCache({});
  };
  s = cluster_.worker(0).CreateWorkerSession(nullptr, request, &response);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(factory_calls, 1);
  cluster_.env(0).worker_cache_factory =
      [](const ClusterSpec&) -> StatusOr<std::unique_ptr<WorkerCacheInterface>> {
    return Unavailable("no channel");
  };
  request.set_session_handle("failing_factory");
  s = cluster_.worker(0).CreateWorkerSession(nullptr, request, &response);
  EXPECT_TRUE(IsUnavailable(s)) << s;
}

TEST_F(WorkerTest, SessionWithItsOwnClusterPullsThroughItsOwnCache) {
  // The server's own cache knows no peers: only the session's cache can reach task 1.
  auto empty_cache = NewLocalWorkerCache({});
  cluster_.env(0).worker_cache = empty_cache.get();
  int factory_calls = 0;
  cluster_.env(0).worker_cache_factory =
      [&](const ClusterSpec&) -> StatusOr<std::unique_ptr<WorkerCacheInterface>> {
    ++factory_calls;
    return NewLocalWorkerCache({{kTask0, &cluster_.worker(0)}, {kTask1, &cluster_.worker(1)}});
  };
  proto::CreateWorkerSessionRequest request;
  request.set_session_handle("propagated");
  *request.mutable_config()->mutable_cluster_def() =
      ClusterSpec::FromFlag("worker=127.0.0.1:1,127.0.0.1:2").value().ToProto();
  proto::CreateWorkerSessionResponse response;
  ASSERT_TRUE(cluster_.worker(0).CreateWorkerSession(nullptr, request, &response).ok());
  ASSERT_TRUE(cluster_.CreateSession(1, "propagated").ok());
  EXPECT_EQ(factory_calls, 1);
  Registered registered = Register(cluster_, CrossGraph(), "propagated");
  StepRun run;
  StartStep(cluster_, registered, "propagated", 300, Tensor::FromVector<float>({1, 1}), &run);
  for (auto& pending : run.pending) {
    ASSERT_TRUE(pending.Wait());
    ASSERT_TRUE(pending.status.ok()) << pending.status;
  }
  EXPECT_TENSOR_EQ(TensorFromProto(run.responses[0].recv(0).tensor()).value(),
                   Tensor::FromVector<float>({2, 3}));
  // A session on the server's cache (created after the change) cannot find task 1: the error
  // names it.
  ASSERT_TRUE(cluster_.CreateSession(0, "plain").ok());
  ASSERT_TRUE(cluster_.CreateSession(1, "plain").ok());
  StepRun failing;
  StartStep(cluster_, Register(cluster_, CrossGraph(), "plain"), "plain", 301,
            Tensor::FromVector<float>({1, 1}), &failing);
  ASSERT_TRUE(failing.pending[0].Wait());
  EXPECT_TRUE(IsInternal(failing.pending[0].status)) << failing.pending[0].status;
  EXPECT_TRUE(Contains(failing.pending[0].status, kTask1)) << failing.pending[0].status;
  ASSERT_TRUE(failing.pending[1].Wait());
}

TEST_F(WorkerTest, UnknownSessionAndGraphHandles) {
  auto requests = PartitionForTasks(cluster_, CrossGraph(), "nope", {"x:0"}, {"y:0"});
  proto::RegisterGraphResponse register_response;
  Status s = cluster_.worker(0).RegisterGraph(nullptr, requests[0], &register_response);
  EXPECT_TRUE(IsAborted(s)) << s;
  EXPECT_TRUE(Contains(s, "'nope'")) << s;

  proto::RunGraphResponse response;
  s = cluster_.worker(0).RunGraph(nullptr, RunRequest("s", "0000000000000bad", 11, {}), &response);
  EXPECT_TRUE(IsAborted(s)) << s;
  EXPECT_TRUE(Contains(s, "0000000000000bad")) << s;

  proto::DeregisterGraphRequest deregister;
  deregister.set_session_handle("s");
  deregister.set_graph_handle("0000000000000bad");
  proto::DeregisterGraphResponse deregister_response;
  s = cluster_.worker(0).DeregisterGraph(nullptr, deregister, &deregister_response);
  EXPECT_TRUE(IsAborted(s)) << s;
  deregister.set_session_handle("nope");
  s = cluster_.worker(0).DeregisterGraph(nullptr, deregister, &deregister_response);
  EXPECT_TRUE(IsAborted(s)) << s;

  Registered registered = Register(cluster_, CrossGraph(), "s");
  deregister.set_session_handle("s");
  deregister.set_graph_handle(registered.handles[0]);
  EXPECT_TRUE(cluster_.worker(0).DeregisterGraph(nullptr, deregister, &deregister_response).ok());
  s = cluster_.worker(0).DeregisterGraph(nullptr, deregister, &deregister_response);
  EXPECT_TRUE(IsAborted(s)) << s;
}

TEST_F(WorkerTest, FeedErrorsNameTheFeed) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  const std::string& handle = registered.handles[0];
  proto::RunGraphResponse response;
  Status missing = cluster_.worker(0).RunGraph(nullptr, RunRequest("s", handle, 12, {}), &response);
  EXPECT_TRUE(IsInvalidArgument(missing)) << missing;
  EXPECT_TRUE(Contains(missing, "'x:0'")) << missing;

  Tensor x = Tensor::FromVector<float>({1, 1});
  Status duplicate = cluster_.worker(0).RunGraph(
      nullptr, RunRequest("s", handle, 13, {{"x:0", x}, {"x:0", x}}), &response);
  EXPECT_TRUE(IsInvalidArgument(duplicate)) << duplicate;
  EXPECT_TRUE(Contains(duplicate, "'x:0'")) << duplicate;

  Status unknown = cluster_.worker(0).RunGraph(
      nullptr, RunRequest("s", handle, 14, {{"x:0", x}, {"z:0", x}}), &response);
  EXPECT_TRUE(IsInvalidArgument(unknown)) << unknown;
  EXPECT_TRUE(Contains(unknown, "'z:0'")) << unknown;

  proto::RunGraphRequest bad = RunRequest("s", handle, 15, {{"x:0", x}});
  bad.mutable_send(0)->mutable_tensor()->set_tensor_content("abc");  // wrong length
  Status bad_tensor = cluster_.worker(0).RunGraph(nullptr, bad, &response);
  EXPECT_TRUE(IsInvalidArgument(bad_tensor)) << bad_tensor;
  EXPECT_TRUE(Contains(bad_tensor, "'x:0'")) << bad_tensor;
}

TEST_F(WorkerTest, RegisterGraphErrors) {
  auto requests = PartitionForTasks(cluster_, CrossGraph(), "s", {"x:0"}, {"y:0"});
  proto::RegisterGraphResponse response;
  // Task 1's partition is not for task 0's devices.
  proto::RegisterGraphRequest wrong_worker = requests[1];
  Status s = cluster_.worker(0).RegisterGraph(nullptr, wrong_worker, &response);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, kCpu1)) << s;
  // _Arg 0 with no feed registered, _Retval 0 with no fetch.
  proto::RegisterGraphRequest no_feeds = requests[0];
  no_feeds.clear_feed();
  s = cluster_.worker(0).RegisterGraph(nullptr, no_feeds, &response);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "_Arg")) << s;
  proto::RegisterGraphRequest no_fetches = requests[0];
  no_fetches.clear_fetch();
  s = cluster_.worker(0).RegisterGraph(nullptr, no_fetches, &response);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "_Retval")) << s;
  // Every node carries its partition's device.
  proto::RegisterGraphRequest no_device = requests[0];
  no_device.mutable_partition(0)->mutable_graph_def()->mutable_node(0)->clear_device();
  s = cluster_.worker(0).RegisterGraph(nullptr, no_device, &response);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
}

TEST_F(WorkerTest, RecvTensorErrors) {
  Registered registered = Register(cluster_, CrossGraph(), "s");
  TensorResponse response;
  proto::RecvTensorRequest request;
  request.set_step_id(16);
  request.set_rendezvous_key("not a key");
  Status s = cluster_.worker(1).RecvTensor(nullptr, request, &response);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "not a key")) << s;
  // The source device is task 0's, not task 1's.
  request.set_rendezvous_key(
      Rendezvous::CreateKey(kCpu0, cluster_.Incarnation(kCpu0), kCpu1, "t", {}));
  s = cluster_.worker(1).RecvTensor(nullptr, request, &response);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, kTask1)) << s;
  // An incarnation of an earlier life of the device.
  request.set_rendezvous_key(
      Rendezvous::CreateKey(kCpu1, cluster_.Incarnation(kCpu1) + 1, kCpu0, "t", {}));
  s = cluster_.worker(1).RecvTensor(nullptr, request, &response);
  EXPECT_TRUE(IsAborted(s)) << s;
  EXPECT_TRUE(Contains(s, "restarted")) << s;
}

}  // namespace
}  // namespace weft
