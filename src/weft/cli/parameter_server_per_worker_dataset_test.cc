// ClusterCoordinator::CreatePerWorkerDataset over real `weft server` processes: two workers and two
// ps tasks on loopback, this process the coordinator running a custom loop. Each worker iterates
// over its own shard, built on the worker from the pipeline's description (ids read there, never
// fed by the coordinator); a worker killed and restarted rejoins only after its iterator was made
// again, and then reads its shard from the start, while the other worker goes on where it was.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/cli/testing/ps_cluster_test_util.h"
#include "weft/core/mutex.h"
#include "weft/core/notification.h"
#include "weft/distribute/coordinator/cluster_coordinator.h"
#include "weft/distribute/coordinator/per_worker_dataset.h"
#include "weft/graph/builder/ops.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"
#include "weft/train/testing/model_test_util.h"
#include "weft/train/worker_sessions.h"

namespace weft::cli {
namespace {

using distribute::ClusterCoordinator;
using distribute::FunctionResult;
using distribute::InputContext;
using distribute::PerWorkerDataset;
using ::testing::HasSubstr;

constexpr int64_t kIds = 400;
constexpr int64_t kBatch = 4;

class PerWorkerDatasetTest : public testing::PsClusterTest {
 protected:
  // Ids 0 .. kIds-1; worker w's shard holds w, w + 2, w + 4, ..., in batches of kBatch, forever.
  static data::Dataset Shard(const InputContext& context) {
    std::vector<int64_t> ids(kIds);
    for (int64_t i = 0; i < kIds; ++i) ids[i] = i;
    return data::Dataset::FromTensors({Tensor::FromVector(ids)})
        .Shard(context.num_input_pipelines(), context.input_pipeline_id())
        .Batch(kBatch)
        .Repeat();
  }

  // The sessions of both workers holding `root`'s graph.
  StatusOr<std::unique_ptr<train::WorkerSessions>> Sessions(const Scope& root) {
    WEFT_ASSIGN_OR_RETURN(proto::GraphDef graph, root.ToGraphDef());
    return train::WorkerSessions::Create({strategy_->WorkerSession(0), strategy_->WorkerSession(1)},
                                         {strategy_->WorkerTask(0), strategy_->WorkerTask(1)},
                                         graph);
  }
};

// Batch `batch` (0-based) of worker `worker`'s shard.
std::vector<int64_t> ExpectedBatch(int worker, int64_t batch) {
  std::vector<int64_t> ids;
  for (int64_t k = 0; k < kBatch; ++k) ids.push_back((batch * kBatch + k) * 2 + worker);
  return ids;
}

TEST_F(PerWorkerDatasetTest, EachWorkerReadsItsShardAndStartsItOverAfterARestart) {
  Scope root = Scope::NewRootScope();
  auto dataset = PerWorkerDataset::Create(root, "ids", 2, strategy_->devices()[0],
                                          &PerWorkerDatasetTest::Shard);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  // The step: the worker's batch, and its sum added to a counter on a ps task.
  std::shared_ptr<distribute::DistributedVariable> total;
  {
    auto in_scope = strategy_->Scope();
    total =
        strategy_
            ->CreateVariable(root, "total", TensorShape(), DataType::kInt64, Initializer::Zeros())
            .value();
  }
  const Scope on_worker = root.WithDevice(strategy_->devices()[0]);
  const Output ids = ops::Identity(on_worker.WithOpName("ids_read"), dataset->components()[0]);
  ops::AssignAddVariableOp(on_worker.WithOpName("add"), total->component(0).handle(),
                           ops::Sum(on_worker, ids, ops::Const(on_worker, 0)));
  auto sessions = Sessions(root);
  ASSERT_TRUE(sessions.ok()) << sessions.status();
  std::vector<Tensor> none;
  ASSERT_TRUE((*sessions)->session(0)->Run({}, {}, {total->initializer().name()}, &none).ok());

  distribute::ClusterCoordinatorOptions options;
  options.worker_names = {strategy_->WorkerTask(0), strategy_->WorkerTask(1)};
  options.recover_worker = [&](int worker) {
    return (*sessions)->Recover(worker, std::chrono::seconds(30));
  };
  ClusterCoordinator coordinator(2, options);
  auto run_on_worker = [&](int worker, const std::vector<std::string>& targets) {
    std::vector<Tensor> outputs;
    return (*sessions)->session(worker)->Run({}, {}, targets, &outputs);
  };
  ASSERT_TRUE(coordinator.CreatePerWorkerDataset(*dataset, run_on_worker).ok());

  // Each worker's batches, in the order it read them (one function at a time per worker).
  Mutex mu;
  std::map<int, std::vector<std::vector<int64_t>>> read;
  Notification restarted_worker_read;
  std::atomic<bool> after_restart{false};
  auto step = [&](int worker) -> FunctionResult {
    if (worker == 0 && after_restart) {
      // Worker 0 waits (bounded) for the restarted worker 1 to have read a batch, so it does.
      EXPECT_TRUE(restarted_worker_read.WaitForNotificationWithTimeout(std::chrono::seconds(60)));
    }
    std::vector<Tensor> outputs;
    WEFT_RETURN_IF_ERROR((*sessions)->session(worker)->Run({}, {ids.name()}, {"add"}, &outputs));
    const int64_t* values = outputs[0].data<int64_t>();
    MutexLock lock(mu);
    read[worker].emplace_back(values, values + outputs[0].NumElements());
    if (worker == 1 && after_restart) restarted_worker_read.Notify();
    return outputs;
  };
  for (int i = 0; i < 20; ++i) coordinator.Schedule(step);
  ASSERT_TRUE(coordinator.Join().ok());
  size_t read_by_0 = 0;
  {
    MutexLock lock(mu);
    ASSERT_EQ(read[0].size() + read[1].size(), 20u);
    for (int worker : {0, 1}) {
      for (size_t b = 0; b < read[worker].size(); ++b) {
        EXPECT_EQ(read[worker][b], ExpectedBatch(worker, static_cast<int64_t>(b)))
            << "worker " << worker << " batch " << b;
      }
    }
    read_by_0 = read[0].size();
    read[1].clear();
  }

  ASSERT_TRUE(testing::RestartWorker(workers_, 1).ok());
  after_restart = true;
  for (int i = 0; i < 20; ++i) coordinator.Schedule(step);
  ASSERT_TRUE(coordinator.Join().ok());
  EXPECT_EQ(coordinator.resources_recreated(), 1);
  EXPECT_GE((*sessions)->recoveries(), 1);
  MutexLock lock(mu);
  ASSERT_FALSE(read[1].empty());
  // Worker 1 made its iterator again and read its shard from the start; worker 0 went on.
  for (size_t b = 0; b < read[1].size(); ++b) {
    EXPECT_EQ(read[1][b], ExpectedBatch(1, static_cast<int64_t>(b))) << "worker 1 batch " << b;
  }
  for (size_t b = read_by_0; b < read[0].size(); ++b) {
    EXPECT_EQ(read[0][b], ExpectedBatch(0, static_cast<int64_t>(b))) << "worker 0 batch " << b;
  }
  EXPECT_EQ(read[0].size() + read[1].size(), read_by_0 + 20);
}

TEST_F(PerWorkerDatasetTest, APipelineWithoutADescriptionIsRefusedNamingTheWorker) {
  Scope root = Scope::NewRootScope();
  auto refused = PerWorkerDataset::Create(
      root, "mapped", 2, strategy_->devices()[0], [](const InputContext& context) {
        return PerWorkerDatasetTest::Shard(context).Map(
            [](data::Element element) -> StatusOr<data::Element> { return element; });
      });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kUnimplemented);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("per-worker dataset 'mapped' of worker 0: the pipeline has a Map"));
}

// Model::Fit of per-worker datasets: a classifier learns from examples only the workers read
// (each its own shard, shuffled and repeated), while worker 1 and then worker 0 are killed and
// restarted; the steps they were running go to the other, and they rejoin with their datasets
// made again.
TEST_F(PerWorkerDatasetTest, FitTrainsOnTheWorkersOwnDatasetsThroughWorkerRestarts) {
  const std::vector<Tensor> examples = train::testing::ClassExamples(512);
  auto dataset_fn = [&examples](const InputContext& context) {
    return data::Dataset::FromTensors(examples)
        .Shard(context.num_input_pipelines(), context.input_pipeline_id())
        .Shuffle(256, 1 + static_cast<uint64_t>(context.input_pipeline_id()))
        .Repeat()
        .Batch(32);
  };
  train::Sequential model(train::Dense(32, "relu"), train::Dense(10));
  ASSERT_TRUE(model
                  .Compile(train::NewAdamOptimizer(0.01),
                           train::SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"},
                           {.strategy = strategy_.get(),
                            .worker_recovery_timeout_ms = 30000,
                            .snapshot_every_steps = 0})
                  .ok());
  testing::KillWorkers kill(workers_, {15, 60});
  // The kills alternate from worker 0: worker 0 at step 15, worker 1 at step 60.
  auto history = model.Fit(dataset_fn, {.epochs = 3, .steps_per_epoch = 40, .callbacks = {&kill}});
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_EQ(kill.kills(), 2);
  EXPECT_EQ(model.position().global_step, 120);
  ASSERT_EQ(history->epochs.size(), 3u);
  EXPECT_LT(history->epochs[2].at("loss"), 0.5 * history->epochs[0].at("loss"));
  auto evaluated = model.Evaluate(data::Dataset::FromTensors(examples).Batch(128));
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  EXPECT_GT(evaluated->at("accuracy"), 0.9);
}

// What Fit of per-worker datasets cannot do is refused, naming why.
TEST_F(PerWorkerDatasetTest, FitOfPerWorkerDatasetsRefusesWhatItCannotDo) {
  auto dataset_fn = [](const InputContext& context) {
    return data::Dataset::FromTensors(train::testing::ClassExamples(64))
        .Shard(context.num_input_pipelines(), context.input_pipeline_id())
        .Repeat()
        .Batch(8);
  };
  auto compiled = [&](train::CompileOptions options) {
    auto model = std::make_unique<train::Sequential>(train::Dense(10));
    EXPECT_TRUE(model
                    ->Compile(train::NewAdamOptimizer(0.01),
                              train::SparseCategoricalCrossentropy(/*from_logits=*/true), {},
                              options)
                    .ok());
    return model;
  };
  Status no_steps = compiled({.strategy = strategy_.get()})->Fit(dataset_fn, {}).status();
  EXPECT_THAT(no_steps.message(), HasSubstr("needs steps_per_epoch"));
  Status one_device = compiled({})->Fit(dataset_fn, {.steps_per_epoch = 4}).status();
  EXPECT_THAT(one_device.message(), HasSubstr("needs an asynchronous strategy"));
  Status exactly_once = compiled({.strategy = strategy_.get(), .exactly_once_input = true})
                            ->Fit(dataset_fn, {.steps_per_epoch = 4})
                            .status();
  EXPECT_THAT(exactly_once.message(), HasSubstr("cannot give exactly-once input"));
  Status mapped =
      compiled({.strategy = strategy_.get()})
          ->Fit(
              [&](const InputContext& context) {
                return dataset_fn(context).Map(
                    [](data::Element element) -> StatusOr<data::Element> { return element; });
              },
              {.steps_per_epoch = 4})
          .status();
  EXPECT_EQ(mapped.code(), Code::kUnimplemented);
  EXPECT_THAT(mapped.message(), HasSubstr("of worker 0: the pipeline has a Map"));
}

}  // namespace
}  // namespace weft::cli
