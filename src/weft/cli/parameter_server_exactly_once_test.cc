// Exactly-once input (CompileOptions::exactly_once_input) over real `weft server` processes: two
// workers and two ps tasks on loopback, this process the coordinator. The model counts visits: a
// table with one row per example, cut across both ps tasks, whose loss gives every row looked up a
// gradient of exactly -1, so plain SGD at rate 1 adds 1 to each row each time its example's step is
// applied. While Fit runs, the workers are killed (SIGKILL) one after the other and restarted on
// their addresses; afterwards every row must hold the number of epochs exactly: no step applied
// twice on some ps task (a step whose worker died after one ps task applied its part), none lost.
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/cli/testing/ps_cluster_test_util.h"
#include "weft/core/str_util.h"
#include "weft/distribute/parameter_server_strategy.h"
#include "weft/distributed/rpc/grpc_server.h"
#include "weft/distributed/rpc/grpc_session.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/server_process.h"
#include "weft/train/callbacks.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"

namespace weft::cli {
namespace {

using distribute::ParameterServerStrategy;
using weft::testing::ServerProcess;

constexpr int64_t kExamples = 4096;
constexpr int64_t kBatch = 32;
constexpr int kEpochs = 2;
constexpr int kDepth = 16;  // 4096 x 16 floats: 256 KiB, cut across both ps tasks

class ExactlyOnceInputTest : public testing::PsClusterTest {};

// -sum(rows looked up): each looked-up value's gradient is -1.
train::Loss CountVisits() {
  return train::Loss("count_visits", [](const Scope& scope, const Output&, const Output& rows) {
    return ops::Mul(
        scope, ops::Sum(scope, rows, ops::Const(scope, Tensor::FromVector<int32_t>({0, 1, 2}))),
        ops::Const(scope, -1.0f));
  });
}

TEST_F(ExactlyOnceInputTest, EveryExampleIsAppliedOncePerEpochWhileWorkersAreKilled) {
  Tensor ids(DataType::kInt64, TensorShape({kExamples, 1}));
  Tensor labels(DataType::kFloat, TensorShape({kExamples, 1}));
  for (int64_t i = 0; i < kExamples; ++i) {
    ids.data<int64_t>()[i] = i;
    labels.data<float>()[i] = 0;
  }
  const data::Dataset examples =
      data::Dataset::FromTensors({ids, labels}).Shuffle(kExamples, 7).Batch(kBatch);
  train::Sequential model(train::Embedding(
      kExamples, kDepth, {.name = "visits", .embeddings_initializer = Initializer::Zeros()}));
  ASSERT_TRUE(model
                  .Compile(train::NewGradientDescentOptimizer(1.0), CountVisits(), {},
                           {.strategy = strategy_.get(),
                            .worker_recovery_timeout_ms = 30000,
                            .snapshot_every_steps = 0,
                            .exactly_once_input = true})
                  .ok());
  const int64_t steps_per_epoch = kExamples / kBatch;  // 128
  testing::KillWorkers kill(workers_, {20, 70, 150, 200});
  auto history = model.Fit(examples, {.epochs = kEpochs, .callbacks = {&kill}});
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_EQ(kill.kills(), 4);
  EXPECT_EQ(model.position().global_step, kEpochs * steps_per_epoch);
  // Steps were lost with their workers and run again elsewhere.
  EXPECT_GE(model.rescheduled_steps(), 1);
  EXPECT_EQ(model.input_shards_reissued(), model.rescheduled_steps());
  EXPECT_EQ(model.lost_commits(), 0);

  // Every row holds the number of epochs: each example's step applied once per epoch.
  auto rows = model.Predict(data::Dataset::FromTensors({ids}).Batch(512));
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->NumElements(), kExamples * kDepth);
  int64_t wrong = 0;
  for (int64_t i = 0; i < kExamples * kDepth; ++i) {
    if (rows->data<float>()[i] != static_cast<float>(kEpochs)) {
      if (++wrong <= 5) {
        ADD_FAILURE() << "example " << i / kDepth << " was applied " << rows->data<float>()[i]
                      << " times in " << kEpochs << " epochs";
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

// Exactly-once input needs the coordinator of an asynchronous strategy, and one step per run.
TEST_F(ExactlyOnceInputTest, ItIsRefusedWhereNoCoordinatorCommits) {
  train::Sequential one_device(train::Embedding(8, 2));
  Status refused = one_device.Compile(train::NewGradientDescentOptimizer(1.0), CountVisits(), {},
                                      {.exactly_once_input = true});
  EXPECT_EQ(refused.code(), Code::kInvalidArgument);
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("needs an asynchronous strategy"));
  train::Sequential unrolled(train::Embedding(8, 2));
  Status several = unrolled.Compile(
      train::NewGradientDescentOptimizer(1.0), CountVisits(), {},
      {.strategy = strategy_.get(), .steps_per_execution = 2, .exactly_once_input = true});
  EXPECT_THAT(several.message(), ::testing::HasSubstr("needs steps_per_execution 1"));
}

}  // namespace
}  // namespace weft::cli
