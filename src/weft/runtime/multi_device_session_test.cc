// DirectSession over several devices: placement by request, partitions joined by _Send/_Recv,
// variables colocated with their updates, the first error of one partition ending the step of all,
// concurrent steps kept apart, and collectives across partitions (all-reduce, broadcast,
// all-gather). The tests run twice: over CPU devices (one host memory: no copy at all) and over
// TEST_ARENA devices (each its own memory, next to CPU:0: tensors crossing memories are copied
// through the device contexts, and counted).
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"
#include "weft/runtime/direct_session.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/testing/test_arena_device.h"

namespace weft {
namespace {

using testing::GetArenaCopyStats;
using testing::kTestArenaDeviceType;
using testing::ResetArenaCopyStats;

std::string DeviceName(const std::string& type, int index) {
  return StrCat("/job:localhost/replica:0/task:0/device:", type, ":", index);
}

std::unique_ptr<Session> MakeSession(const std::string& type, const proto::GraphDef& graph,
                                     int devices, int64_t timeout_ms = 20'000) {
  SessionOptions options = testing::SessionOptionsFor(type, devices);
  options.config.set_operation_timeout_in_ms(timeout_ms);
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  Status created = (*session)->Create(graph);
  EXPECT_TRUE(created.ok()) << created;
  return std::move(session).value();
}

// Runs each test over two devices of the parameter's type.
class MultiDeviceSessionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ResetArenaCopyStats(); }
  bool arena() const { return GetParam() == kTestArenaDeviceType; }
  std::string device(int index) const { return DeviceName(GetParam(), index); }
  std::unique_ptr<Session> MakeSession(const proto::GraphDef& graph, int devices,
                                       int64_t timeout_ms = 20'000) const {
    return ::weft::MakeSession(GetParam(), graph, devices, timeout_ms);
  }
  // relu(x @ w + b) with the MatMul on device 1 and the rest on device 0 (x crosses, then the
  // product).
  proto::GraphDef SplitDenseGraph() const {
    Scope root = Scope::NewRootScope().WithDevice(device(0));
    auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, PartialShape({-1, 2}));
    auto w = ops::Const(root.WithOpName("w"),
                        Tensor::FromVector<float>({1, -1, 2, 0.5f}, TensorShape({2, 2})));
    auto product = ops::MatMul(root.WithOpName("product").WithDevice(device(1)), x, w);
    auto b = ops::Const(root.WithOpName("b"), {0.5f, -10.0f});
    ops::Relu(root.WithOpName("y"), ops::BiasAdd(root, product, b));
    ops::Square(root.WithOpName("squared").WithDevice(device(1)), x);  // x read twice there
    return root.ToGraphDef().value();
  }
};

TEST_P(MultiDeviceSessionTest, RunsAGraphSplitOverTwoDevices) {
  const std::string kCpu0 = device(0), kCpu1 = device(1);
  auto session = MakeSession(SplitDenseGraph(), 2);
  std::vector<Tensor> outputs;
  proto::RunOptions trace;
  trace.set_trace_level(proto::RunOptions::FULL_TRACE);
  proto::RunMetadata metadata;
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  Status s = session->Run(trace, {{"x", x}}, {"y", "squared"}, {}, &outputs, &metadata);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TENSOR_EQ(outputs[0], Tensor::FromVector<float>({5.5f, 0, 11.5f, 0}, TensorShape({2, 2})));
  EXPECT_TENSOR_EQ(outputs[1], Tensor::FromVector<float>({1, 4, 9, 16}, TensorShape({2, 2})));
  // Both devices ran nodes, and the product ran where it was asked to.
  std::map<std::string, std::set<std::string>> ops_by_device;
  for (const auto& device : metadata.step_stats().dev_stats()) {
    for (const auto& node : device.node_stats()) ops_by_device[device.device()].insert(node.op());
  }
  EXPECT_TRUE(ops_by_device[kCpu1].count("MatMul"));
  EXPECT_TRUE(ops_by_device[kCpu1].count("_Recv"));
  EXPECT_TRUE(ops_by_device[kCpu0].count("_Send") || ops_by_device[kCpu0].count("_HostSend"));
  EXPECT_FALSE(ops_by_device[kCpu0].count("MatMul"));
  // CPUs share host memory: nothing is copied. Arenas: the fed x enters device memory, the product
  // goes from one arena to the other, and the fetches leave for host memory.
  testing::ArenaCopyStats copies = GetArenaCopyStats();
  if (arena()) {
    EXPECT_GT(copies.host_to_device, 0);
    EXPECT_GT(copies.device_to_device, 0);
    EXPECT_GT(copies.device_to_host, 0);
  } else {
    EXPECT_EQ(copies.total(), 0);
  }
}

TEST_P(MultiDeviceSessionTest, CopiesOnlyWhereATensorChangesMemory) {
  // A constant on device 0, negated on device 1 and fetched.
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a").WithDevice(device(0)),
                      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}));
  ops::Neg(root.WithOpName("negated").WithDevice(device(1)), a);
  auto session = MakeSession(root.ToGraphDef().value(), 2);
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {"negated"}, {}, &outputs).ok());  // builds the kernels
  ResetArenaCopyStats();
  Status s = session->Run({}, {"negated"}, {}, &outputs);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TENSOR_EQ(outputs[0], Tensor::FromVector<float>({-1, -2, -3, -4, -5, -6, -7, -8}));
  EXPECT_TRUE(outputs[0].IsInHostMemory());
  testing::ArenaCopyStats copies = GetArenaCopyStats();
  if (arena()) {
    // One copy from arena 0 to arena 1, one out of arena 1 for the fetch; the constant was put in
    // device memory once, when its kernel was built.
    EXPECT_EQ(copies.host_to_device, 0);
    EXPECT_EQ(copies.device_to_device, 1);
    EXPECT_EQ(copies.device_to_host, 1);
    EXPECT_EQ(copies.bytes, 2 * 8 * 4);
  } else {
    EXPECT_EQ(copies.total(), 0);
  }
}

TEST_P(MultiDeviceSessionTest, VariableUpdatesStayWithTheVariable) {
  Scope root = Scope::NewRootScope();
  auto handle = ops::VarHandleOp(root.WithOpName("v").WithDevice(device(1)), DataType::kFloat,
                                 PartialShape({2}));
  ops::AssignVariableOp(root.WithOpName("init"), handle, {1.0f, 2.0f});
  // Unplaced: the update and the read follow the variable to CPU:1 (a resource input colocates).
  auto delta = ops::Const(root.WithOpName("delta"), {10.0f, 20.0f});
  ops::AssignAddVariableOp(root.WithOpName("add"), handle, delta);
  auto read = ops::ReadVariableOp(root.WithOpName("read"), handle);
  ops::Neg(root.WithOpName("negated").WithDevice(device(0)), read);
  auto session = MakeSession(root.ToGraphDef().value(), 2);
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &outputs).ok());
  ASSERT_TRUE(session->Run({}, {}, {"add"}, &outputs).ok());
  Status s = session->Run({}, {"negated"}, {}, &outputs);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TENSOR_EQ(outputs[0], Tensor::FromVector<float>({-11.0f, -22.0f}, TensorShape({2})));
}

TEST_P(MultiDeviceSessionTest, AnErrorInOnePartitionEndsTheWholeStep) {
  // CPU:1 waits in _Recv for a reshape on CPU:0 that fails at run time: the step must end with
  // the reshape's error, not hang and not report a bare abort.
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  auto shape = ops::Placeholder(root.WithOpName("shape"), DataType::kInt32);
  auto reshaped = ops::Reshape(root.WithOpName("reshaped").WithDevice(device(0)), x, shape);
  ops::Neg(root.WithOpName("negated").WithDevice(device(1)), reshaped);
  auto session = MakeSession(root.ToGraphDef().value(), 2);
  std::vector<Tensor> outputs;
  Status s = session->Run({{"x", Tensor::FromVector<float>({1, 2, 3}, TensorShape({3}))},
                           {"shape", Tensor::FromVector<int32_t>({2, 2}, TensorShape({2}))}},
                          {"negated"}, {}, &outputs);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("reshaped"), std::string::npos) << s;
  // The session is still usable.
  s = session->Run({{"x", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({4}))},
                    {"shape", Tensor::FromVector<int32_t>({2, 2}, TensorShape({2}))}},
                   {"negated"}, {}, &outputs);
  ASSERT_TRUE(s.ok()) << s;
}

TEST_P(MultiDeviceSessionTest, ConcurrentStepsNeverSeeEachOthersTensors) {
  auto session = MakeSession(SplitDenseGraph(), 2);
  constexpr int kThreads = 4, kSteps = 25;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int step = 0; step < kSteps; ++step) {
        const float v = static_cast<float>(t * 100 + step);
        std::vector<Tensor> outputs;
        Status s =
            session->Run({{"x", Tensor::FromVector<float>({v, 0, 0, v}, TensorShape({2, 2}))}},
                         {"squared"}, {}, &outputs);
        if (!s.ok() || outputs[0].data<float>()[0] != v * v ||
            outputs[0].data<float>()[3] != v * v) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(MultiDeviceSessionTest, AllReducesABucketAcrossPartitions) {
  // One replica per device, each all-reducing a bucket of two tensors: every replica gets the
  // mean of both, in both tensors.
  Scope root = Scope::NewRootScope();
  std::vector<std::string> fetches;
  for (int replica = 0; replica < 2; ++replica) {
    Scope device = root.WithDevice(this->device(replica));
    const float base = replica == 0 ? 1.0f : 3.0f;
    auto a = ops::Const(device.WithOpName("a" + std::to_string(replica)), {base, 2 * base});
    auto b = ops::Const(device.WithOpName("b" + std::to_string(replica)), base * 10);
    auto reduced = ops::CollectiveAllReduce(
        device.WithOpName("all_reduce" + std::to_string(replica)), {a, b},
        {.group_size = 2, .group_key = 1, .instance_key = 7, .final_op = "Div"});
    ASSERT_EQ(reduced.size(), 2u);
    fetches.push_back(reduced[0].name());
    fetches.push_back(reduced[1].name());
  }
  ASSERT_TRUE(root.status().ok()) << root.status();
  auto session = MakeSession(root.ToGraphDef().value(), 2);
  for (int step = 0; step < 3; ++step) {
    ResetArenaCopyStats();
    std::vector<Tensor> outputs;
    Status s = session->Run({}, fetches, {}, &outputs);
    ASSERT_TRUE(s.ok()) << s;
    for (int replica = 0; replica < 2; ++replica) {
      EXPECT_TENSOR_EQ(outputs[2 * replica], Tensor::FromVector<float>({2, 4}, TensorShape({2})));
      EXPECT_TENSOR_EQ(outputs[2 * replica + 1], Tensor::Scalar(20.0f));
    }
    if (step == 0) continue;  // the first step also builds the kernels (constants copied in)
    testing::ArenaCopyStats copies = GetArenaCopyStats();
    if (arena()) {
      // Each of 2 members x 2 tensors: into host memory for the sum, back to the member, and out
      // again for the fetch.
      EXPECT_EQ(copies.host_to_device, 4);
      EXPECT_EQ(copies.device_to_host, 8);
      EXPECT_EQ(copies.device_to_device, 0);
    } else {
      EXPECT_EQ(copies.total(), 0);
    }
  }
}

TEST_P(MultiDeviceSessionTest, BroadcastsAVariableThenAllGathersAcrossThreeDevices) {
  // Mirrored variables the way a strategy creates them: device 0's initial value is broadcast into
  // the copies on devices 1 and 2. Then each device all-gathers its copy times (device index + 1).
  constexpr int kDevices = 3;
  const ops::CollectiveGroupAttrs broadcast = {.group_size = kDevices, .instance_key = 1};
  const ops::CollectiveGroupAttrs gather = {.group_size = kDevices, .instance_key = 2};
  Scope root = Scope::NewRootScope();
  std::vector<std::string> copy_targets, gathered;
  std::vector<Output> handles;
  for (int d = 0; d < kDevices; ++d) {
    Scope on = root.WithDevice(device(d));
    const std::string index = std::to_string(d);
    handles.push_back(
        ops::VarHandleOp(on.WithOpName("v" + index), DataType::kFloat, PartialShape({2, 2})));
    if (d == 0) {
      ops::AssignVariableOp(on.WithOpName("init"), handles[0],
                            Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
      auto sent = ops::CollectiveBroadcastSend(
          on.WithOpName("send"), ops::ReadVariableOp(on, handles[0]), {2, 2}, broadcast);
      copy_targets.push_back(sent.node()->name());
    } else {
      auto received = ops::CollectiveBroadcastRecv(on.WithOpName("recv" + index), DataType::kFloat,
                                                   {2, 2}, broadcast);
      ops::AssignVariableOp(on.WithOpName("copy" + index), handles[d], received);
      copy_targets.push_back("copy" + index);
    }
    auto scaled = ops::Mul(on, ops::ReadVariableOp(on, handles[d]), float(d + 1));
    gathered.push_back(
        ops::CollectiveAllGather(on.WithOpName("gather" + index), scaled, gather).name());
  }
  ops::AssignAddVariableOp(root.WithOpName("bump"), handles[0],
                           Tensor::FromVector<float>({10, 10, 10, 10}, {2, 2}));
  ASSERT_TRUE(root.status().ok()) << root.status();
  auto session = MakeSession(root.ToGraphDef().value(), kDevices);
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &outputs).ok());
  Status s = session->Run({}, {}, copy_targets, &outputs);
  ASSERT_TRUE(s.ok()) << s;
  // Changing device 0's variable afterwards leaves the copies alone, though on CPUs they were
  // handed the very buffer it sent.
  ASSERT_TRUE(session->Run({}, {}, {"bump"}, &outputs).ok());
  for (int step = 0; step < 2; ++step) {
    s = session->Run({}, gathered, {}, &outputs);
    ASSERT_TRUE(s.ok()) << s;
    Tensor expected =
        Tensor::FromVector<float>({11, 12, 13, 14, 2, 4, 6, 8, 3, 6, 9, 12}, TensorShape({6, 2}));
    for (int d = 0; d < kDevices; ++d) EXPECT_TENSOR_EQ(outputs[d], expected);
  }
}

TEST_P(MultiDeviceSessionTest, ATimeoutEndsACollectiveWaitingForAbsentMembers) {
  // Only one of two members is fetched, so the other is pruned and never joins: the step must end
  // at the session's deadline instead of waiting forever.
  Scope root = Scope::NewRootScope();
  std::vector<Output> first;
  for (int replica = 0; replica < 2; ++replica) {
    Scope device = root.WithDevice(this->device(replica));
    auto value = ops::Const(device.WithOpName("value" + std::to_string(replica)), 1.0f);
    auto reduced = ops::CollectiveAllReduce(device.WithOpName("sum" + std::to_string(replica)),
                                            {value}, {.group_size = 2, .instance_key = 3});
    if (replica == 0) first = reduced;
  }
  auto session = MakeSession(root.ToGraphDef().value(), 2, /*timeout_ms=*/300);
  std::vector<Tensor> outputs;
  Status s = session->Run({}, {first[0].name()}, {}, &outputs);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(IsDeadlineExceeded(s)) << s;
}

INSTANTIATE_TEST_SUITE_P(DeviceTypes, MultiDeviceSessionTest,
                         ::testing::Values(std::string("CPU"), std::string(kTestArenaDeviceType)));

TEST(MultiDeviceSessionPlacementTest, ImpossiblePlacementNamesTheNodeAndTheDevices) {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("far_away").WithDevice("/device:CPU:5"), 1.0f);
  auto session = MakeSession("CPU", root.ToGraphDef().value(), 2);
  std::vector<Tensor> outputs;
  Status s = session->Run({}, {"far_away"}, {}, &outputs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("far_away"), std::string::npos) << s;
  EXPECT_NE(s.message().find("CPU:5"), std::string::npos) << s;

  SessionOptions soft;
  (*soft.config.mutable_device_count())["CPU"] = 2;
  soft.config.set_allow_soft_placement(true);
  auto lenient = NewSession(soft).value();
  ASSERT_TRUE(lenient->Create(root.ToGraphDef().value()).ok());
  s = lenient->Run({}, {"far_away"}, {}, &outputs);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(MultiDeviceSessionPlacementTest, DevicesThatCannotBeCreatedFailCreate) {
  SessionOptions options;
  (*options.config.mutable_device_count())["GPU"] = 2;
  auto session = NewSession(options).value();
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("c"), 1.0f);
  Status s = session->Create(root.ToGraphDef().value());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("GPU"), std::string::npos) << s;
  EXPECT_NE(s.message().find("registered types: CPU"), std::string::npos) << s;
}

}  // namespace
}  // namespace weft
