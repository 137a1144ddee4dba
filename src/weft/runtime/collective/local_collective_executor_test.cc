// Tests of LocalCollectiveExecutor: members run as threads of the test (bounded waits), results
// checked against a reference sum taken in rank (device name) order, plus the error, abort and
// buffer-sharing contracts, and the CollectiveAllReduce kernel run through it.
#include "weft/runtime/collective/local_collective_executor.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/framework/copy_tensor.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/collective/shuffled_members.h"
#include "weft/runtime/cpu_device.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/testing/test_arena_device.h"

namespace weft {
namespace {

constexpr auto kWait = std::chrono::seconds(20);

std::string DeviceName(const std::string& type, int index) {
  return StrCat("/job:localhost/replica:0/task:0/device:", type, ":", index);
}

// `count` CPU devices with one intra-op thread each.
std::vector<std::unique_ptr<DeviceBase>> CpuDevices(int count) {
  std::vector<std::unique_ptr<DeviceBase>> devices;
  for (int i = 0; i < count; ++i)
    devices.push_back(std::make_unique<CpuDevice>(DeviceName("CPU", i), 1));
  return devices;
}

std::vector<DeviceBase*> Pointers(const std::vector<std::unique_ptr<DeviceBase>>& devices) {
  std::vector<DeviceBase*> result;
  for (const auto& device : devices) result.push_back(device.get());
  return result;
}

CollectiveParams Params(int group_size, int64_t instance_key = 1, std::string final_op = "Id") {
  CollectiveParams params;
  params.group_key = 7;
  params.group_size = group_size;
  params.instance_key = instance_key;
  params.merge_op = "Add";
  params.final_op = std::move(final_op);
  return params;
}

template <typename T>
Tensor Random(const TensorShape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<T> dist(-10, 10);
  Tensor t(DataTypeToEnum<T>::value, shape);
  for (T& value : t.flat<T>()) value = dist(rng);
  return t;
}

// Sums inputs[m][i] over m in order, divided by the member count when `mean`.
template <typename T>
Tensor ReferenceReduce(const std::vector<std::vector<Tensor>>& inputs, size_t i, bool mean) {
  Tensor sum(DataTypeToEnum<T>::value, inputs[0][i].shape());
  for (int64_t e = 0; e < sum.NumElements(); ++e) {
    T value = inputs[0][i].data<T>()[e];
    for (size_t m = 1; m < inputs.size(); ++m) value += inputs[m][i].data<T>()[e];
    if (mean) value /= static_cast<T>(inputs.size());
    sum.data<T>()[e] = value;
  }
  return sum;
}

struct MemberResult {
  Status status;
  std::vector<Tensor> outputs;
  Notification done;
};

// Runs member m (params[m], inputs[m] on devices[m]) on a thread of its own and waits, bounded,
// for every member's done.
std::vector<std::unique_ptr<MemberResult>> RunMembers(
    CollectiveExecutor& executor, const std::vector<DeviceBase*>& devices,
    const std::vector<CollectiveParams>& params, const std::vector<std::vector<Tensor>>& inputs) {
  std::vector<std::unique_ptr<MemberResult>> results;
  for (size_t m = 0; m < devices.size(); ++m) results.push_back(std::make_unique<MemberResult>());
  std::vector<std::thread> threads;
  for (size_t m = 0; m < devices.size(); ++m) {
    threads.emplace_back([&, m] {
      MemberResult* result = results[m].get();
      executor.AllReduceAsync(params[m], devices[m], inputs[m], &result->outputs,
                              [result](const Status& status) {
                                result->status = status;
                                result->done.Notify();
                              });
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t m = 0; m < results.size(); ++m) {
    if (!results[m]->done.WaitForNotificationWithTimeout(kWait)) {
      ADD_FAILURE() << "member " << m << " never finished";
      executor.StartAbort(DeadlineExceeded("test timed out"));
      results[m]->done.WaitForNotification();
    }
  }
  return results;
}

// All-reduces random tensors of `shapes` over `members` CPU devices and checks every member's
// outputs against the reference, and that all members share one output buffer.
template <typename T>
void CheckAllReduce(int members, const std::vector<TensorShape>& shapes, const std::string& op,
                    std::mt19937& rng) {
  SCOPED_TRACE(StrCat(members, " members, ", DataTypeName(DataTypeToEnum<T>::value), ", ", op));
  auto devices = CpuDevices(members);
  std::vector<std::vector<Tensor>> inputs(members);
  for (auto& bucket : inputs) {
    for (const TensorShape& shape : shapes) bucket.push_back(Random<T>(shape, rng));
  }
  LocalCollectiveExecutor executor;
  auto results = RunMembers(executor, Pointers(devices),
                            std::vector<CollectiveParams>(members, Params(members, 1, op)), inputs);
  for (int m = 0; m < members; ++m) {
    ASSERT_TRUE(results[m]->status.ok()) << results[m]->status;
    ASSERT_EQ(results[m]->outputs.size(), shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) {
      EXPECT_TENSOR_EQ(results[m]->outputs[i], ReferenceReduce<T>(inputs, i, op == "Div"));
      EXPECT_TRUE(results[m]->outputs[i].SharesBufferWith(results[0]->outputs[i]) ||
                  shapes[i].num_elements() == 0);
    }
  }
}

// Vectors, a scalar, an empty tensor, a matrix; [1001, 300] is large enough to spread the slices
// over the devices' threads, and [10] has fewer cache lines than members (some slices are empty).
std::vector<TensorShape> TestShapes() {
  return {TensorShape({1000}), TensorShape({}),          TensorShape({0}),
          TensorShape({3, 7}), TensorShape({1001, 300}), TensorShape({10})};
}

TEST(LocalCollectiveExecutorTest, SumsOverTwoAndFourMembers) {
  std::mt19937 rng(1);
  for (int members : {2, 4}) {
    for (const TensorShape& shape : TestShapes()) {
      CheckAllReduce<float>(members, {shape}, "Id", rng);
      CheckAllReduce<double>(members, {shape}, "Id", rng);
    }
  }
}

TEST(LocalCollectiveExecutorTest, DivGivesTheMean) {
  std::mt19937 rng(2);
  for (int members : {2, 3, 4}) {
    CheckAllReduce<float>(members, {TensorShape({257}), TensorShape({600, 600})}, "Div", rng);
    CheckAllReduce<double>(members, {TensorShape({257}), TensorShape({600, 600})}, "Div", rng);
  }
  // Hand-computed: mean of 1, 2, 6 and 3, 4, 8.
  auto devices = CpuDevices(2);
  LocalCollectiveExecutor executor;
  auto results =
      RunMembers(executor, Pointers(devices), {Params(2, 1, "Div"), Params(2, 1, "Div")},
                 {{Tensor::FromVector<float>({1, 2, 6})}, {Tensor::FromVector<float>({3, 4, 8})}});
  ASSERT_TRUE(results[0]->status.ok()) << results[0]->status;
  EXPECT_TENSOR_EQ(results[0]->outputs[0], Tensor::FromVector<float>({2, 3, 7}));
  EXPECT_TENSOR_EQ(results[1]->outputs[0], Tensor::FromVector<float>({2, 3, 7}));
}

TEST(LocalCollectiveExecutorTest, ReducesABucketOfTensorsInOneInstance) {
  std::mt19937 rng(3);
  CheckAllReduce<float>(3, TestShapes(), "Id", rng);
  CheckAllReduce<double>(4, TestShapes(), "Div", rng);
}

TEST(LocalCollectiveExecutorTest, CpuMembersShareOneFreshOutputBuffer) {
  std::mt19937 rng(4);
  auto devices = CpuDevices(4);
  std::vector<std::vector<Tensor>> inputs;
  for (int m = 0; m < 4; ++m) inputs.push_back({Random<float>(TensorShape({64, 64}), rng)});
  LocalCollectiveExecutor executor;
  auto results =
      RunMembers(executor, Pointers(devices), std::vector<CollectiveParams>(4, Params(4)), inputs);
  for (int m = 0; m < 4; ++m) {
    ASSERT_TRUE(results[m]->status.ok()) << results[m]->status;
    EXPECT_EQ(results[m]->outputs[0].raw_data(), results[0]->outputs[0].raw_data());
    for (int k = 0; k < 4; ++k) EXPECT_FALSE(results[m]->outputs[0].SharesBufferWith(inputs[k][0]));
  }
}

TEST(LocalCollectiveExecutorTest, MembersOutsideHostMemoryGetTheirOwnCopies) {
  std::mt19937 rng(5);
  // Two devices with memory of their own and two CPU devices (one without threads).
  std::vector<std::unique_ptr<DeviceBase>> devices;
  devices.push_back(testing::NewTestArenaDevice(DeviceName("TEST_ARENA", 0)));
  devices.push_back(testing::NewTestArenaDevice(DeviceName("TEST_ARENA", 1)));
  devices.push_back(std::make_unique<CpuDevice>(DeviceName("CPU", 0), 1));
  devices.push_back(std::make_unique<DeviceBase>(DeviceName("CPU", 1), "CPU"));  // no pool
  EXPECT_FALSE(SharesHostMemory(devices[0].get()));
  EXPECT_TRUE(SharesHostMemory(devices[2].get()));
  std::vector<std::vector<Tensor>> inputs, on_devices;
  for (int m = 0; m < 4; ++m) {
    inputs.push_back({Random<float>(TensorShape({700, 500}), rng)});
    auto placed = CopyTensor(nullptr, devices[m].get(), {}, inputs[m][0]);
    ASSERT_TRUE(placed.ok()) << placed.status();
    on_devices.push_back({*placed});
  }
  EXPECT_FALSE(on_devices[0][0].IsInHostMemory());
  EXPECT_TRUE(on_devices[2][0].SharesBufferWith(inputs[2][0]));  // host to host: no copy
  testing::ResetArenaCopyStats();
  LocalCollectiveExecutor executor;
  auto results = RunMembers(executor, Pointers(devices),
                            std::vector<CollectiveParams>(4, Params(4)), on_devices);
  // Rank order is device name order: CPU:0, CPU:1, TEST_ARENA:0, TEST_ARENA:1.
  std::vector<std::vector<Tensor>> ranked = {inputs[2], inputs[3], inputs[0], inputs[1]};
  Tensor expected = ReferenceReduce<float>(ranked, 0, false);
  for (int m = 0; m < 4; ++m) {
    ASSERT_TRUE(results[m]->status.ok()) << results[m]->status;
    EXPECT_TENSOR_EQ(results[m]->outputs[0], expected);
  }
  // The CPUs share the host sum; each arena member gets it copied into its own memory.
  EXPECT_TRUE(results[2]->outputs[0].SharesBufferWith(results[3]->outputs[0]));
  EXPECT_EQ(results[0]->outputs[0].allocator(), devices[0]->GetAllocator());
  EXPECT_EQ(results[1]->outputs[0].allocator(), devices[1]->GetAllocator());
  const testing::ArenaCopyStats copies = testing::GetArenaCopyStats();
  EXPECT_EQ(copies.device_to_host, 2);  // each arena member's input, for the sum
  EXPECT_EQ(copies.host_to_device, 2);  // the sum, to each arena member
  EXPECT_EQ(copies.device_to_device, 0);
}

TEST(LocalCollectiveExecutorTest, GroupOfOneCompletesAtOnceWithItsInput) {
  auto devices = CpuDevices(1);
  LocalCollectiveExecutor executor;
  Tensor input = Tensor::FromVector<double>({1.5, -2});
  std::vector<Tensor> outputs;
  bool called = false;
  executor.AllReduceAsync(Params(1, 1, "Div"), devices[0].get(), {input}, &outputs,
                          [&](const Status& status) {
                            EXPECT_TRUE(status.ok()) << status;
                            called = true;
                          });
  ASSERT_TRUE(called);  // no waiting: done ran inside AllReduceAsync
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_TENSOR_EQ(outputs[0], input);
}

// Runs a 3-member instance whose third member differs from the first two by `change`, then a
// late fourth member; every member must get InvalidArgument containing each of `expected`.
void CheckMismatchFailsEveryMember(
    const std::function<void(CollectiveParams&, std::vector<Tensor>&)>& change,
    const std::vector<std::string>& expected) {
  auto devices = CpuDevices(4);
  std::vector<CollectiveParams> params(3, Params(4, 9));
  std::vector<std::vector<Tensor>> inputs(3, {Tensor::FromVector<float>({1, 2, 3})});
  change(params[2], inputs[2]);
  LocalCollectiveExecutor executor;
  auto results =
      RunMembers(executor, {devices[0].get(), devices[1].get(), devices[2].get()}, params, inputs);
  auto late = RunMembers(executor, {devices[3].get()}, {Params(4, 9)}, {inputs[0]});
  results.push_back(std::move(late[0]));
  for (const auto& result : results) {
    EXPECT_TRUE(IsInvalidArgument(result->status)) << result->status;
    EXPECT_NE(result->status.message().find("collective instance (group_key 7, instance_key 9)"),
              std::string::npos)
        << result->status;
    for (const std::string& text : expected) {
      EXPECT_NE(result->status.message().find(text), std::string::npos)
          << result->status << " lacks " << text;
    }
  }
}

TEST(LocalCollectiveExecutorTest, MismatchedMembersFailEveryMember) {
  // The first member to join sets the reference; which one it is depends on thread timing, so
  // check only values and device names that appear whichever it was.
  CheckMismatchFailsEveryMember(
      [](CollectiveParams&, std::vector<Tensor>& inputs) {
        inputs[0] = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
      },
      {"tensor 0 of shape", "[3]", "[2,2]", DeviceName("CPU", 2)});
  CheckMismatchFailsEveryMember(
      [](CollectiveParams& params, std::vector<Tensor>&) { params.group_size = 3; },
      {"group_size", DeviceName("CPU", 2)});
  CheckMismatchFailsEveryMember(
      [](CollectiveParams& params, std::vector<Tensor>&) { params.final_op = "Div"; },
      {"final_op", "Div", "Id"});
  CheckMismatchFailsEveryMember(
      [](CollectiveParams&, std::vector<Tensor>& inputs) { inputs.push_back(inputs[0]); },
      {"tensor count", "1", "2"});
  CheckMismatchFailsEveryMember(
      [](CollectiveParams&, std::vector<Tensor>& inputs) {
        inputs[0] = Tensor::FromVector<double>({1, 2, 3});
      },
      {"tensor 0 of dtype", "float32", "float64"});
}

TEST(LocalCollectiveExecutorTest, InvalidParamsFailTheMember) {
  auto devices = CpuDevices(1);
  LocalCollectiveExecutor executor;
  auto run = [&](CollectiveParams params, Tensor input) {
    auto results = RunMembers(executor, {devices[0].get()}, {params}, {{input}});
    return results[0]->status;
  };
  Tensor floats = Tensor::FromVector<float>({1});
  CollectiveParams params = Params(0, 1);
  Status status = run(params, floats);
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("group_size 0"), std::string::npos) << status;
  params = Params(2, 2);
  params.merge_op = "Max";
  status = run(params, floats);
  EXPECT_NE(status.message().find("merge_op 'Max'"), std::string::npos) << status;
  status = run(Params(2, 3, "Sqrt"), floats);
  EXPECT_NE(status.message().find("final_op 'Sqrt'"), std::string::npos) << status;
  status = run(Params(2, 4), Tensor::FromVector<int32_t>({1}));
  EXPECT_NE(status.message().find("int32"), std::string::npos) << status;
  std::vector<Tensor> outputs;
  executor.AllReduceAsync(Params(2, 5), nullptr, {floats}, &outputs,
                          [&](const Status& s) { status = s; });
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
}

TEST(LocalCollectiveExecutorTest, ExtraOrDuplicateMembersFail) {
  auto devices = CpuDevices(3);
  LocalCollectiveExecutor executor;
  Tensor input = Tensor::FromVector<float>({1, 2});
  auto full = RunMembers(executor, {devices[0].get(), devices[1].get()}, {Params(2), Params(2)},
                         {{input}, {input}});
  ASSERT_TRUE(full[0]->status.ok()) << full[0]->status;
  auto extra = RunMembers(executor, {devices[2].get()}, {Params(2)}, {{input}});
  EXPECT_TRUE(IsInvalidArgument(extra[0]->status)) << extra[0]->status;
  EXPECT_NE(extra[0]->status.message().find("joined after all members"), std::string::npos);
  // The same device twice in one instance.
  auto twice = RunMembers(executor, {devices[0].get(), devices[0].get()},
                          {Params(3, 2), Params(3, 2)}, {{input}, {input}});
  for (const auto& result : twice) {
    EXPECT_TRUE(IsInvalidArgument(result->status)) << result->status;
    EXPECT_NE(result->status.message().find("joined twice"), std::string::npos);
  }
}

TEST(LocalCollectiveExecutorTest, AbortWakesWaitersAndFailsLaterMembers) {
  auto devices = CpuDevices(3);
  LocalCollectiveExecutor executor;
  Tensor input = Tensor::FromVector<float>({1, 2});
  std::vector<MemberResult> waiting(2);
  for (int m = 0; m < 2; ++m) {
    MemberResult* result = &waiting[m];
    executor.AllReduceAsync(Params(3), devices[m].get(), {input}, &result->outputs,
                            [result](const Status& status) {
                              result->status = status;
                              result->done.Notify();
                            });
  }
  EXPECT_FALSE(waiting[0].done.HasBeenNotified());
  std::thread aborter([&] { executor.StartAbort(Cancelled("step 12 was cancelled")); });
  aborter.join();
  for (MemberResult& result : waiting) {
    ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(kWait));
    EXPECT_TRUE(IsCancelled(result.status)) << result.status;
    EXPECT_NE(result.status.message().find("aborted by: step 12 was cancelled"), std::string::npos)
        << result.status;
    EXPECT_NE(result.status.message().find("instance_key 1"), std::string::npos) << result.status;
  }
  // The third member of the aborted instance, and a new instance, fail at once.
  for (int64_t instance : {1, 2}) {
    auto late = RunMembers(executor, {devices[2].get()}, {Params(3, instance)}, {{input}});
    EXPECT_TRUE(IsCancelled(late[0]->status)) << late[0]->status;
    EXPECT_NE(late[0]->status.message().find(StrCat("instance_key ", instance)), std::string::npos);
  }
}

TEST(LocalCollectiveExecutorTest, ManyInstancesRunConcurrently) {
  constexpr int kMembers = 4;
  constexpr int kInstances = 40;
  auto devices = CpuDevices(kMembers);
  LocalCollectiveExecutor executor;
  std::mt19937 rng(6);
  // inputs[k][m]: member m's tensor of instance k; every member launches in its own order.
  std::vector<std::vector<std::vector<Tensor>>> inputs(kInstances);
  for (int k = 0; k < kInstances; ++k) {
    const TensorShape shape({k % 3 == 0 ? 70000 : 1 + k});
    for (int m = 0; m < kMembers; ++m) inputs[k].push_back({Random<float>(shape, rng)});
  }
  std::vector<std::vector<MemberResult>> results(kInstances);
  for (auto& instance : results) instance = std::vector<MemberResult>(kMembers);
  testing::JoinInShuffledOrders(kMembers, kInstances, rng, [&](int m, int k) {
    MemberResult* result = &results[k][m];
    executor.AllReduceAsync(Params(kMembers, 100 + k, k % 2 ? "Div" : "Id"), devices[m].get(),
                            inputs[k][m], &result->outputs, [result](const Status& status) {
                              result->status = status;
                              result->done.Notify();
                            });
  });
  for (int k = 0; k < kInstances; ++k) {
    std::vector<std::vector<Tensor>> member_inputs;
    for (int m = 0; m < kMembers; ++m) member_inputs.push_back(inputs[k][m]);
    Tensor expected = ReferenceReduce<float>(member_inputs, 0, k % 2 == 1);
    for (int m = 0; m < kMembers; ++m) {
      ASSERT_TRUE(results[k][m].done.WaitForNotificationWithTimeout(kWait)) << k << " " << m;
      ASSERT_TRUE(results[k][m].status.ok()) << results[k][m].status;
      EXPECT_TENSOR_EQ(results[k][m].outputs[0], expected);
    }
  }
}

// The CollectiveAllReduce kernel on two CPU devices, meeting through the executor.
TEST(LocalCollectiveExecutorTest, RunsCollectiveAllReduceKernels) {
  auto devices = CpuDevices(2);
  const OpDef* op = ops::AllOps().LookUp("CollectiveAllReduce").value();
  proto::NodeDef node;
  node.set_name("allreduce");
  node.set_op("CollectiveAllReduce");
  node.add_input("a");
  node.add_input("b");
  auto& attrs = *node.mutable_attr();
  attrs["T"] = MakeAttrValue(DataType::kFloat);
  attrs["N"] = MakeAttrValue(2);
  attrs["group_size"] = MakeAttrValue(2);
  attrs["group_key"] = MakeAttrValue(1);
  attrs["instance_key"] = MakeAttrValue(5);
  attrs["final_op"] = MakeAttrValue("Div");
  AddDefaultsToNodeDef(*op, &node);
  ASSERT_TRUE(ValidateNodeDef(node, *op).ok());
  LocalCollectiveExecutor executor;
  std::vector<std::vector<Tensor>> inputs = {
      {Tensor::FromVector<float>({1, 2}), Tensor::Scalar<float>(10)},
      {Tensor::FromVector<float>({3, 6}), Tensor::Scalar<float>(20)}};
  std::vector<std::vector<Tensor>> outputs(2);
  std::vector<std::thread> threads;
  for (int m = 0; m < 2; ++m) {
    threads.emplace_back([&, m] {
      auto kernel = kernels::AllKernels().CreateKernel(node, *op, devices[m].get());
      ASSERT_TRUE(kernel.ok()) << kernel.status();
      OpKernelContext::Params params;
      params.kernel = kernel->get();
      params.device = devices[m].get();
      params.inputs = &inputs[m];
      params.collective_executor = &executor;
      OpKernelContext context(params);
      ASSERT_TRUE((*kernel)->Compute(&context).ok()) << context.status();
      outputs[m] = context.outputs();
    });
  }
  for (auto& thread : threads) thread.join();
  for (int m = 0; m < 2; ++m) {
    ASSERT_EQ(outputs[m].size(), 2u);
    EXPECT_TENSOR_EQ(outputs[m][0], Tensor::FromVector<float>({2, 4}));
    EXPECT_TENSOR_EQ(outputs[m][1], Tensor::Scalar<float>(15));
  }
}

}  // namespace
}  // namespace weft
