// ParameterServerStrategy over real `weft server` processes on loopback: two workers and two ps
// tasks, each on an ephemeral port, with this test process as the coordinator (the chief task,
// whose in-process server hosts the master). Covers the variables' placement on the ps tasks,
// every worker's updates reaching the shared variables (a custom loop on the ClusterCoordinator),
// Model::Fit under the strategy, and the refusals of a cluster it cannot use. Every server is torn
// down by its ServerProcess, even when a test fails.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/distribute/coordinator/cluster_coordinator.h"
#include "weft/distribute/parameter_server_strategy.h"
#include "weft/distributed/rpc/grpc_server.h"
#include "weft/distributed/rpc/grpc_session.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/variable.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/server_process.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/train/layers/core.h"
#include "weft/train/layers/embedding_collection.h"
#include "weft/train/model.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::cli {
namespace {

using distribute::ParameterServerStrategy;
using ::testing::HasSubstr;
using weft::testing::ServerProcess;

// `count` servers of `job`, each a one-task cluster on an ephemeral port (the coordinator's
// sessions carry the whole cluster to them).
std::vector<std::unique_ptr<ServerProcess>> StartJob(const std::string& job, int count) {
  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> placeholders(static_cast<size_t>(count), "127.0.0.1:0");
    StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(
        WEFT_BINARY, {"--cluster", job + "=" + StrJoin(placeholders, ","), "--job", job, "--task",
                      std::to_string(i), "--intra-op-threads", "1", "--inter-op-threads", "2"});
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return {};
    servers.push_back(std::move(server).value());
  }
  return servers;
}

std::vector<std::string> AddressesOf(const std::vector<std::unique_ptr<ServerProcess>>& servers) {
  std::vector<std::string> addresses;
  for (const auto& server : servers) addresses.push_back(server->address());
  return addresses;
}

class ParameterServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterGrpcServerFactory();
    RegisterGrpcSessionFactory();
    workers_ = StartJob("worker", 2);
    ps_ = StartJob("ps", 2);
    ASSERT_EQ(workers_.size(), 2u);
    ASSERT_EQ(ps_.size(), 2u);
  }

  StatusOr<std::unique_ptr<ParameterServerStrategy>> NewStrategy(
      std::map<std::string, std::vector<std::string>> jobs = {},
      TaskId task = {.job = "chief", .index = 0}) {
    if (jobs.empty()) {
      jobs = {
          {"chief", {"127.0.0.1:0"}}, {"worker", AddressesOf(workers_)}, {"ps", AddressesOf(ps_)}};
    }
    WEFT_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterSpec::FromJobs(std::move(jobs)));
    return ParameterServerStrategy::Create(
        {.server = {.cluster = std::move(cluster), .task = std::move(task)},
         .worker_timeout_ms = 20000});
  }

  std::vector<std::unique_ptr<ServerProcess>> workers_;
  std::vector<std::unique_ptr<ServerProcess>> ps_;
};

// A counter on the ps tasks that each step adds to from its worker: after 40 steps scheduled on
// the coordinator it holds 40, and both workers ran some of them.
TEST_F(ParameterServerTest, EveryWorkersStepsUpdateTheSharedVariables) {
  auto strategy = NewStrategy();
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  Scope root = Scope::NewRootScope();
  std::shared_ptr<distribute::DistributedVariable> counter, other;
  {
    auto in_scope = (*strategy)->Scope();
    counter = (*strategy)
                  ->CreateVariable(root, "counter", TensorShape(), DataType::kFloat,
                                   Initializer::Constant(0))
                  .value();
    other = (*strategy)
                ->CreateVariable(root, "other", TensorShape(), DataType::kFloat,
                                 Initializer::Constant(0))
                .value();
  }
  EXPECT_EQ(counter->devices()[0], (*strategy)->PsDevice(0));
  EXPECT_EQ(other->devices()[0], (*strategy)->PsDevice(1));
  Scope on_worker = root.WithDevice((*strategy)->devices()[0]);
  Output one = ops::Const(on_worker.WithOpName("one"), 1.0f);
  ops::AssignAddVariableOp(on_worker.WithOpName("add"), counter->component(0).handle(), one);
  ops::AssignAddVariableOp(on_worker.WithOpName("add_other"), other->component(0).handle(), one);
  const proto::GraphDef graph = root.ToGraphDef().value();

  std::vector<std::unique_ptr<Session>> sessions;
  for (int w = 0; w < 2; ++w) {
    auto session = NewSession((*strategy)->WorkerSession(w));
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_TRUE((*session)->Create(graph).ok());
    sessions.push_back(std::move(session).value());
  }
  std::vector<Tensor> outputs;
  ASSERT_TRUE(sessions[0]->Run({}, {}, {counter->initializer().name()}, &outputs).ok());
  ASSERT_TRUE(sessions[0]->Run({}, {}, {other->initializer().name()}, &outputs).ok());

  distribute::ClusterCoordinator coordinator(2);
  std::vector<distribute::RemoteValue> values;
  for (int i = 0; i < 40; ++i) {
    values.push_back(coordinator.Schedule([&](int worker) -> distribute::FunctionResult {
      std::vector<Tensor> none;
      WEFT_RETURN_IF_ERROR(sessions[worker]->Run({}, {}, {"add", "add_other"}, &none));
      return none;
    }));
  }
  ASSERT_TRUE(coordinator.Join().ok());
  std::set<int> workers;
  for (const auto& value : values) workers.insert(value.worker());
  EXPECT_EQ(workers, (std::set<int>{0, 1}));
  for (auto& session : sessions) session->Close().IgnoreError();
  // A new session sees the counters: the state is the ps tasks', not a session's.
  Output read = counter->component(0).Read(root.WithOpName("read"));
  Output read_other = other->component(0).Read(root.WithOpName("read_other"));
  auto reader = NewSession((*strategy)->WorkerSession(1));
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->Create(root.ToGraphDef().value()).ok());
  ASSERT_TRUE((*reader)->Run({}, {read.name(), read_other.name()}, {}, &outputs).ok());
  EXPECT_EQ(outputs[0].data<float>()[0], 40.0f);
  EXPECT_EQ(outputs[1].data<float>()[0], 40.0f);
  (*reader)->Close().IgnoreError();
}

// Model::Fit under the strategy: steps on both workers, asynchronously, variables on the ps.
TEST_F(ParameterServerTest, FitTrainsAClassifierWithItsVariablesOnThePsTasks) {
  auto strategy = NewStrategy();
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  train::Sequential model(train::Dense(32, "relu", {.name = "hidden"}),
                          train::Dense(10, "", {.name = "logits"}));
  ASSERT_TRUE(model
                  .Compile(train::NewAdamOptimizer(0.01),
                           train::SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"},
                           {.strategy = strategy->get()})
                  .ok());
  auto history = model.Fit(train::testing::Classes(1024, 32, /*shuffle_seed=*/3), {.epochs = 8});
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_EQ(model.position().global_step, 8 * 1024 / 32);
  EXPECT_LT(history->epochs.back().at("loss"), history->epochs.front().at("loss"));
  std::set<std::string> devices;
  for (const auto& variable : model.distributed_variables()) {
    devices.insert(variable->devices()[0]);
  }
  EXPECT_EQ(devices, (std::set<std::string>{(*strategy)->PsDevice(0), (*strategy)->PsDevice(1)}));
  auto evaluated = model.Evaluate(train::testing::Classes(512, 64));
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  EXPECT_GT(evaluated->at("accuracy"), 0.6);
}

// An Embedding whose table is above the strategy's threshold (20,000 x 16 floats, 1.28 MB) is
// made in two parts, one on each ps task; Fit trains it (each part gets the sparse gradient of its
// own rows, applied on its ps) until the ids' classes are learned.
TEST_F(ParameterServerTest, FitShardsALargeEmbeddingTableAcrossThePsTasks) {
  auto strategy = NewStrategy();
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  const int64_t n = 512;
  Tensor ids(DataType::kInt64, TensorShape({n, 1}));
  Tensor labels(DataType::kInt64, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    ids.data<int64_t>()[i] = (i * 7919) % 20000;  // spread over both parts' rows
    labels.data<int64_t>()[i] = i % 2;
  }
  data::Dataset examples = data::Dataset::FromTensors({ids, labels}).Batch(32);
  train::Sequential model(train::Embedding(20000, 16, {.name = "table"}), train::Flatten(),
                          train::Dense(2, "", {.name = "logits"}));
  ASSERT_TRUE(model
                  .Compile(train::NewAdagradOptimizer(0.5),
                           train::SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"},
                           {.strategy = strategy->get()})
                  .ok());
  auto history = model.Fit(examples, {.epochs = 6});
  ASSERT_TRUE(history.ok()) << history.status();
  std::map<std::string, std::string> parts;  // name -> device
  for (const auto& variable : model.distributed_variables()) {
    const std::string& name = variable->name();
    if (name.starts_with("table/embeddings") && name.find("part_") != std::string::npos &&
        name.find("Adagrad") == std::string::npos) {
      parts[name] = variable->devices()[0];
    }
  }
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts.count("table/embeddings/part_0"), 1u);
  EXPECT_EQ(parts.count("table/embeddings/part_1"), 1u);
  EXPECT_NE(parts["table/embeddings/part_0"], parts["table/embeddings/part_1"]);
  EXPECT_LT(history->epochs.back().at("loss"), 0.5 * history->epochs.front().at("loss"));
  auto evaluated = model.Evaluate(examples);
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  EXPECT_GT(evaluated->at("accuracy"), 0.9);
}

// Several tables looked up together (EmbeddingCollection: one exchange of ids and rows per ps
// task) and three steps per scheduled function (steps_per_execution): every batch is trained once,
// the large table is cut across both ps tasks, and the ids' classes are learned.
TEST_F(ParameterServerTest, FitTrainsAnEmbeddingCollectionThreeStepsPerFunction) {
  auto strategy = NewStrategy();
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  const int64_t n = 512;
  Tensor ids(DataType::kInt64, TensorShape({n, 2}));
  Tensor labels(DataType::kInt64, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    ids.data<int64_t>()[2 * i] = (i * 7919) % 20000;  // spread over both parts' rows
    ids.data<int64_t>()[2 * i + 1] = i % 50;
    labels.data<int64_t>()[i] = i % 2;
  }
  data::Dataset examples = data::Dataset::FromTensors({ids, labels}).Batch(32);
  train::Sequential model(train::EmbeddingCollection({20000, 50}, 8, {.name = "tables"}),
                          train::Flatten(), train::Dense(2, "", {.name = "logits"}));
  ASSERT_TRUE(model
                  .Compile(train::NewAdagradOptimizer(0.5),
                           train::SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"},
                           {.strategy = strategy->get(), .steps_per_execution = 3})
                  .ok());
  auto history = model.Fit(examples, {.epochs = 6});
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_EQ(model.position().global_step, 6 * n / 32);
  std::set<std::string> part_devices;
  for (const auto& variable : model.distributed_variables()) {
    if (variable->name().starts_with("tables/table_0/embeddings/part_") &&
        variable->name().find("Adagrad") == std::string::npos) {
      part_devices.insert(variable->devices()[0]);
    }
  }
  EXPECT_EQ(part_devices.size(), 2u);
  EXPECT_LT(history->epochs.back().at("loss"), 0.5 * history->epochs.front().at("loss"));
  auto evaluated = model.Evaluate(examples);
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  EXPECT_GT(evaluated->at("accuracy"), 0.9);
}

// A table cut across 2 ps tasks restores onto 3 (cut into 3 parts there) and onto one device: the
// checkpoint lists the table whole beside its parts, and each new part reads its rows from
// whichever saved parts hold them, so every model predicts what the trained one does.
TEST_F(ParameterServerTest, ATableSavedFromTwoPsTasksRestoresOntoThreeAndOntoOneDevice) {
  auto strategy = NewStrategy();
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  const int64_t n = 256;
  Tensor ids(DataType::kInt64, TensorShape({n, 1}));
  Tensor labels(DataType::kInt64, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    ids.data<int64_t>()[i] = (i * 7919) % 20000;  // spread over every part's rows
    labels.data<int64_t>()[i] = i % 2;
  }
  const data::Dataset examples = data::Dataset::FromTensors({ids, labels}).Batch(32);
  const data::Dataset inputs = data::Dataset::FromTensors({ids}).Batch(32);
  auto make_model = [] {
    return train::Sequential(train::Embedding(20000, 16, {.name = "table"}), train::Flatten(),
                             train::Dense(2, "", {.name = "logits"}));
  };
  auto compile = [](train::Model& model, distribute::Strategy* on) {
    return model.Compile(train::NewAdagradOptimizer(0.5),
                         train::SparseCategoricalCrossentropy(/*from_logits=*/true), {},
                         {.strategy = on});
  };
  // The devices of the table's parts (not its optimizer slots).
  auto part_devices = [](train::Model& model) {
    std::set<std::string> devices;
    for (const auto& variable : model.distributed_variables()) {
      if (variable->name().starts_with("table/embeddings/part_") &&
          variable->name().find("Adagrad") == std::string::npos) {
        devices.insert(variable->devices()[0]);
      }
    }
    return devices;
  };
  train::Sequential trained = make_model();
  ASSERT_TRUE(compile(trained, strategy->get()).ok());
  ASSERT_TRUE(trained.Fit(examples, {.epochs = 3}).ok());
  ASSERT_EQ(part_devices(trained).size(), 2u);
  StatusOr<Tensor> expected = trained.Predict(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  io::testing::TempDir dir;
  const std::string weights = dir.File("weights");
  ASSERT_TRUE(trained.SaveWeights(weights).ok());
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(weights);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  ASSERT_TRUE(manifest->partitioned.contains("table/embeddings"));
  EXPECT_EQ(manifest->partitioned.at("table/embeddings").parts.size(), 2u);

  std::vector<std::unique_ptr<ServerProcess>> three_ps = StartJob("ps", 3);
  ASSERT_EQ(three_ps.size(), 3u);
  auto on_three = NewStrategy({{"chief", {"127.0.0.1:0"}},
                               {"worker", AddressesOf(workers_)},
                               {"ps", AddressesOf(three_ps)}});
  ASSERT_TRUE(on_three.ok()) << on_three.status();
  train::Sequential resharded = make_model();
  ASSERT_TRUE(compile(resharded, on_three->get()).ok());
  ASSERT_TRUE(resharded.LoadWeights(weights).ok());
  StatusOr<Tensor> predicted = resharded.Predict(inputs);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(part_devices(resharded).size(), 3u);
  EXPECT_TENSOR_NEAR(*predicted, *expected);

  train::Sequential on_one_device = make_model();
  ASSERT_TRUE(compile(on_one_device, nullptr).ok());
  ASSERT_TRUE(on_one_device.LoadWeights(weights).ok());
  predicted = on_one_device.Predict(inputs);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_TENSOR_NEAR(*predicted, *expected);
}

TEST_F(ParameterServerTest, AClusterItCannotUseIsRefusedNamingWhatIsMissing) {
  auto no_ps = NewStrategy({{"chief", {"127.0.0.1:0"}}, {"worker", AddressesOf(workers_)}});
  ASSERT_FALSE(no_ps.ok());
  EXPECT_TRUE(IsInvalidArgument(no_ps.status())) << no_ps.status();
  EXPECT_THAT(no_ps.status().message(), HasSubstr("'ps' job"));
  EXPECT_THAT(no_ps.status().message(), HasSubstr("weft launch --workers N --ps M"));
  auto no_workers = NewStrategy({{"chief", {"127.0.0.1:0"}}, {"ps", AddressesOf(ps_)}});
  ASSERT_FALSE(no_workers.ok());
  EXPECT_THAT(no_workers.status().message(), HasSubstr("'worker' job"));
  auto on_a_worker = NewStrategy({{"worker", {"127.0.0.1:0"}}, {"ps", AddressesOf(ps_)}},
                                 {.job = "worker", .index = 0});
  ASSERT_FALSE(on_a_worker.ok());
  EXPECT_THAT(on_a_worker.status().message(), HasSubstr("not on task worker:0"));
}

// A ps task that is not there: the first session names it within the worker timeout.
TEST_F(ParameterServerTest, AnUnreachablePsTaskIsNamed) {
  const std::string nowhere = StrCat("127.0.0.1:", weft::testing::UnusedLoopbackPort());
  ClusterSpec cluster = ClusterSpec::FromJobs({{"chief", {"127.0.0.1:0"}},
                                               {"worker", AddressesOf(workers_)},
                                               {"ps", {ps_[0]->address(), nowhere}}})
                            .value();
  auto strategy = ParameterServerStrategy::Create(
      {.server = {.cluster = std::move(cluster), .task = {.job = "chief", .index = 0}},
       .worker_timeout_ms = 1500});
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  auto session = NewSession((*strategy)->WorkerSession(0));
  ASSERT_TRUE(session.ok());
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("c"), 1.0f);
  Status created = (*session)->Create(root.ToGraphDef().value());
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.message(), HasSubstr("/job:ps/replica:0/task:1"));
  EXPECT_THAT(created.message(), HasSubstr(nowhere));
}

}  // namespace
}  // namespace weft::cli
