// DistributedCollectiveExecutor end to end inside one process: "tasks" with their own devices,
// Worker (task 0's leads the groups) and DistributedCollectiveExecutorMgr, joined by a local worker
// cache, over the real transports (shared memory, and TCP forced). Checks the hierarchical
// all-reduce against a plain sum, broadcast, all-gather, repeated steps, a member that never
// comes, mismatched shapes across tasks, and a group that spans only one task.
#include "weft/distributed/collective/distributed_collective_executor.h"

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/metrics.h"
#include "weft/core/notification.h"
#include "weft/core/str_util.h"
#include "weft/distributed/collective/distributed_collective_executor_mgr.h"
#include "weft/distributed/worker/local_worker_cache.h"
#include "weft/distributed/worker/worker.h"
#include "weft/runtime/device_mgr.h"
#include "weft/testing/test_arena_device.h"

namespace weft {
namespace {

constexpr auto kWait = std::chrono::seconds(30);

std::string TaskName(int t) { return StrCat("/job:worker/replica:0/task:", t); }

struct Task {
  WorkerEnv env;
  std::unique_ptr<Worker> worker;
  std::unique_ptr<DeviceMgr> devices;
  std::unique_ptr<DistributedCollectiveExecutorMgr> collectives;
};

class Cluster {
 public:
  // Every task takes the registered transport `transport`. For "hierarchical" even tasks are on
  // "host-a" and odd ones on "host-b" (interleaved ranks); otherwise all on "host-a".
  // With `arena_devices` each task's devices are TEST_ARENA devices (memory of their own).
  Cluster(int tasks, int devices_per_task, const std::string& transport,
          std::chrono::milliseconds timeout = std::chrono::seconds(20),
          bool arena_devices = false) {
    std::map<std::string, WorkerInterface*> workers;
    for (int t = 0; t < tasks; ++t) {
      auto task = std::make_unique<Task>();
      task->env.task_name = TaskName(t);
      task->worker = std::make_unique<Worker>(&task->env);
      workers[TaskName(t)] = task->worker.get();
      tasks_.push_back(std::move(task));
    }
    cache_ = NewLocalWorkerCache(workers);
    for (int t = 0; t < tasks; ++t) {
      Task& task = *tasks_[t];
      proto::ConfigProto config;
      (*config.mutable_device_count())["CPU"] = devices_per_task;
      if (arena_devices) {
        std::vector<std::unique_ptr<Device>> devices;
        for (int d = 0; d < devices_per_task; ++d) {
          devices.push_back(testing::NewTestArenaDevice(
              StrCat(TaskName(t), "/device:", testing::kTestArenaDeviceType, ":", d)));
        }
        task.devices = std::make_unique<DeviceMgr>(std::move(devices));
      } else {
        task.devices = CreateLocalDevices(config, devices_per_task).value();
      }
      DistributedCollectiveOptions options;
      options.task_name = TaskName(t);
      options.leader_task = TaskName(0);
      options.worker_cache = cache_.get();
      options.hostname =
          transport == "hierarchical" ? (t % 2 == 0 ? "host-a" : "host-b") : "host-a";
      options.transport = transport;
      options.collective_timeout = timeout;
      options.heartbeat_timeout_ms = 0;
      task.collectives = DistributedCollectiveExecutorMgr::Create(std::move(options)).value();
    }
  }
  ~Cluster() {
    for (auto& task : tasks_) task->collectives.reset();
  }

  int num_tasks() const { return static_cast<int>(tasks_.size()); }
  int devices_per_task() const {
    return static_cast<int>(tasks_[0]->devices->ListDevices().size());
  }
  Device* device(int t, int d) const { return tasks_[t]->devices->ListDevices()[d]; }
  DistributedCollectiveExecutorMgr& collectives(int t) { return *tasks_[t]->collectives; }

 private:
  std::vector<std::unique_ptr<Task>> tasks_;
  std::unique_ptr<WorkerCacheInterface> cache_;
};

// One member's outcome.
struct Result {
  Notification done;
  Status status;
  std::vector<Tensor> outputs;
  Tensor value;

  StatusCallback Callback() {
    return [this](const Status& result) {
      status = result;
      done.Notify();
    };
  }
  // Waits for the member; false (with a failure) when it did not finish.
  bool Wait() { return done.WaitForNotificationWithTimeout(kWait); }
};

Tensor Filled(const TensorShape& shape, float base) {
  Tensor tensor(DataType::kFloat, shape);
  float* data = tensor.data<float>();
  for (int64_t i = 0; i < tensor.NumElements(); ++i) data[i] = base + 0.001f * (i % 997);
  return tensor;
}

CollectiveParams Params(int group_size, int64_t instance, const std::string& final_op = "Id") {
  CollectiveParams params;
  params.group_key = 1;
  params.group_size = group_size;
  params.instance_key = instance;
  params.merge_op = "Add";
  params.final_op = final_op;
  return params;
}

class DistributedCollectiveExecutorTest : public ::testing::TestWithParam<std::string> {};

// The collective seconds of every all-reduce across tasks, whatever its transport.
int64_t AllReduceCount() {
  const std::string text = metrics::Registry::Global().ExportText();
  const std::string prefix = "weft_collective_seconds_count{kind=\"all-reduce\"";
  int64_t count = 0;
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    count += std::stoll(text.substr(text.find("} ", at) + 2));
  }
  return count;
}

// What this process sent to `peer` over TCP collectives (and tensors).
int64_t SentTo(const std::string& peer) {
  return metrics::Registry::Global()
      .FindOrAddCounter("weft_sent_bytes_total", "", {"peer"})
      ->WithLabels({peer})
      ->value();
}

TEST_P(DistributedCollectiveExecutorTest, AllReduceMatchesAPlainSumOnEveryMemberStepAfterStep) {
  // Three tasks: hierarchically, host-a has tasks 0 and 2 and host-b task 1.
  Cluster cluster(3, 2, GetParam());
  const int64_t all_reduces_before = AllReduceCount();
  const int64_t sent_to_task1_before = SentTo(TaskName(1));
  const int members = cluster.num_tasks() * cluster.devices_per_task();
  const TensorShape shape({1001});
  for (int step = 0; step < 3; ++step) {
    const std::string final_op = step == 1 ? "Div" : "Id";
    std::vector<std::unique_ptr<CollectiveExecutor>> executors;
    for (int t = 0; t < cluster.num_tasks(); ++t) {
      executors.push_back(cluster.collectives(t).NewStepExecutor(step, nullptr));
    }
    std::vector<std::unique_ptr<Result>> results;
    std::vector<Tensor> inputs;
    for (int t = 0; t < cluster.num_tasks(); ++t) {
      for (int d = 0; d < cluster.devices_per_task(); ++d) {
        inputs.push_back(Filled(shape, static_cast<float>(step + 10 * t + d)));
        auto result = std::make_unique<Result>();
        Result* raw = result.get();
        executors[t]->AllReduceAsync(Params(members, 7, final_op), cluster.device(t, d),
                                     {inputs.back()}, &raw->outputs, raw->Callback());
        results.push_back(std::move(result));
      }
    }
    std::vector<float> expected(shape.num_elements(), 0.0f);
    for (const Tensor& input : inputs) {
      for (int64_t i = 0; i < shape.num_elements(); ++i) expected[i] += input.data<float>()[i];
    }
    for (float& value : expected) value /= final_op == "Div" ? members : 1;
    for (auto& result : results) {
      ASSERT_TRUE(result->Wait());
      ASSERT_TRUE(result->status.ok()) << result->status;
      ASSERT_EQ(result->outputs.size(), 1u);
      const float* got = result->outputs[0].data<float>();
      for (int64_t i = 0; i < shape.num_elements(); ++i) {
        ASSERT_NEAR(got[i], expected[i], 1e-3f) << "element " << i << " step " << step;
      }
      // Bitwise the same on every member.
      EXPECT_EQ(std::memcmp(got, results[0]->outputs[0].data<float>(), shape.num_elements() * 4),
                0);
    }
  }
  // Each task's group ran one operation per step, and each is in the process's metrics.
  EXPECT_EQ(AllReduceCount() - all_reduces_before, 3 * cluster.num_tasks());
  if (GetParam() != "shm") {
    // Over TCP every other member sent task 1 at least its share of 1001 floats per step.
    EXPECT_GE(SentTo(TaskName(1)) - sent_to_task1_before, 3 * 1001 * 4 / 3);
  }
}

TEST_P(DistributedCollectiveExecutorTest, BroadcastAndAllGatherAcrossTasks) {
  // Four tasks: hierarchically, host-a has tasks 0 and 2, host-b tasks 1 and 3.
  Cluster cluster(4, 2, GetParam());
  const int tasks = cluster.num_tasks();
  const int members = tasks * 2;
  std::vector<std::unique_ptr<CollectiveExecutor>> executors;
  for (int t = 0; t < tasks; ++t)
    executors.push_back(cluster.collectives(t).NewStepExecutor(1, nullptr));
  const TensorShape shape({3, 5});
  const Tensor source = Filled(shape, 42.0f);
  std::vector<std::unique_ptr<Result>> broadcast;
  for (int t = 0; t < tasks; ++t) {
    for (int d = 0; d < 2; ++d) {
      auto result = std::make_unique<Result>();
      Result* raw = result.get();
      // The source is no host's leader and not task 0.
      const bool is_source = t == 3 && d == 1;
      if (is_source) raw->value = source;
      executors[t]->BroadcastAsync(Params(members, 3), cluster.device(t, d), is_source,
                                   DataType::kFloat, shape, &raw->value, raw->Callback());
      broadcast.push_back(std::move(result));
    }
  }
  for (auto& result : broadcast) {
    ASSERT_TRUE(result->Wait());
    ASSERT_TRUE(result->status.ok()) << result->status;
    ASSERT_EQ(result->value.shape(), shape);
    EXPECT_EQ(std::memcmp(result->value.data<float>(), source.data<float>(), 15 * 4), 0);
  }
  std::vector<std::unique_ptr<Result>> gathered;
  for (int t = 0; t < tasks; ++t) {
    for (int d = 0; d < 2; ++d) {
      auto result = std::make_unique<Result>();
      Result* raw = result.get();
      executors[t]->AllGatherAsync(Params(members, 4), cluster.device(t, d),
                                   Filled(TensorShape({2, 2}), static_cast<float>(10 * t + d)),
                                   &raw->value, raw->Callback());
      gathered.push_back(std::move(result));
    }
  }
  for (auto& result : gathered) {
    ASSERT_TRUE(result->Wait());
    ASSERT_TRUE(result->status.ok()) << result->status;
    ASSERT_EQ(result->value.shape(), TensorShape({2 * members, 2}));
    // Two rows per member, in member order: task 0 device 0, task 0 device 1, task 1 device 0...
    const float* rows = result->value.data<float>();
    for (int m = 0; m < members; ++m) {
      EXPECT_FLOAT_EQ(rows[4 * m], static_cast<float>(10 * (m / 2) + m % 2)) << "member " << m;
    }
  }
}

TEST_P(DistributedCollectiveExecutorTest, MismatchedShapesAcrossTasksFailEveryMemberNamingBoth) {
  Cluster cluster(2, 1, GetParam());
  std::vector<std::unique_ptr<Result>> results;
  std::vector<std::unique_ptr<CollectiveExecutor>> executors;
  for (int t = 0; t < 2; ++t) {
    executors.push_back(cluster.collectives(t).NewStepExecutor(1, nullptr));
    auto result = std::make_unique<Result>();
    Result* raw = result.get();
    executors[t]->AllReduceAsync(Params(2, 9), cluster.device(t, 0),
                                 {Filled(TensorShape({t == 0 ? 10 : 12}), 1.0f)}, &raw->outputs,
                                 raw->Callback());
    results.push_back(std::move(result));
  }
  for (auto& result : results) {
    ASSERT_TRUE(result->Wait());
    EXPECT_TRUE(IsInvalidArgument(result->status)) << result->status;
    EXPECT_NE(result->status.message().find("task:0"), std::string::npos) << result->status;
    EXPECT_NE(result->status.message().find("task:1"), std::string::npos) << result->status;
  }
}

TEST_P(DistributedCollectiveExecutorTest, AGroupThatNeverFormsNamesTheMissingTask) {
  Cluster cluster(2, 1, GetParam(), std::chrono::milliseconds(300));
  auto executor = cluster.collectives(0).NewStepExecutor(1, nullptr);
  Result result;
  executor->AllReduceAsync(Params(2, 1), cluster.device(0, 0), {Filled(TensorShape({4}), 1.0f)},
                           &result.outputs, result.Callback());
  ASSERT_TRUE(result.Wait());
  EXPECT_EQ(result.status.code(), Code::kDeadlineExceeded) << result.status;
  EXPECT_NE(result.status.message().find("task:0/device:CPU:0"), std::string::npos)
      << result.status;
}

INSTANTIATE_TEST_SUITE_P(Transports, DistributedCollectiveExecutorTest,
                         ::testing::ValuesIn(CollectiveTransportRegistry::Global().Names()),
                         [](const auto& info) { return info.param; });

TEST(DistributedCollectiveExecutorLocalTest, AGroupOfOneTaskStaysInProcess) {
  Cluster cluster(1, 2, "");
  auto executor = cluster.collectives(0).NewStepExecutor(1, nullptr);
  std::vector<std::unique_ptr<Result>> results;
  for (int d = 0; d < 2; ++d) {
    auto result = std::make_unique<Result>();
    Result* raw = result.get();
    executor->AllReduceAsync(Params(2, 1, "Div"), cluster.device(0, d),
                             {Filled(TensorShape({6}), static_cast<float>(d))}, &raw->outputs,
                             raw->Callback());
    results.push_back(std::move(result));
  }
  for (auto& result : results) {
    ASSERT_TRUE(result->Wait());
    ASSERT_TRUE(result->status.ok()) << result->status;
    EXPECT_FLOAT_EQ(result->outputs[0].data<float>()[0], 0.5f);
  }
}

// Members whose devices have memory of their own: the transports see host copies, and each member
// gets its result in its device's memory.
TEST(DistributedCollectiveExecutorDeviceTest, DeviceMembersAreStagedThroughHostMemory) {
  Cluster cluster(2, 1, "tcp", std::chrono::seconds(20), /*arena_devices=*/true);
  testing::ResetArenaCopyStats();
  const TensorShape shape({1001});
  std::vector<std::unique_ptr<CollectiveExecutor>> executors;
  std::vector<std::unique_ptr<Result>> results;
  for (int t = 0; t < 2; ++t) {
    executors.push_back(cluster.collectives(t).NewStepExecutor(1, nullptr));
    Device* device = cluster.device(t, 0);
    ASSERT_FALSE(device->HasHostMemory());
    Tensor input = Tensor::Allocate(device->GetAllocator(), DataType::kFloat, shape).value();
    for (int64_t i = 0; i < shape.num_elements(); ++i) input.data<float>()[i] = t + 0.5f * i;
    auto result = std::make_unique<Result>();
    Result* raw = result.get();
    executors[t]->AllReduceAsync(Params(2, 1), device, {input}, &raw->outputs, raw->Callback());
    results.push_back(std::move(result));
  }
  for (int t = 0; t < 2; ++t) {
    ASSERT_TRUE(results[t]->Wait());
    ASSERT_TRUE(results[t]->status.ok()) << results[t]->status;
    ASSERT_EQ(results[t]->outputs.size(), 1u);
    const Tensor& output = results[t]->outputs[0];
    EXPECT_EQ(output.allocator(), cluster.device(t, 0)->GetAllocator()) << "task " << t;
    for (int64_t i = 0; i < shape.num_elements(); ++i) {
      ASSERT_FLOAT_EQ(output.data<float>()[i], 1.0f + 1.0f * i) << "element " << i;
    }
  }
  // Each member's input went to host memory and its result came back.
  const testing::ArenaCopyStats copies = testing::GetArenaCopyStats();
  EXPECT_GE(copies.device_to_host, 2);
  EXPECT_GE(copies.host_to_device, 2);
}

}  // namespace
}  // namespace weft
