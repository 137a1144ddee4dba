// Tests of the CollectiveBroadcastSend, CollectiveBroadcastRecv and CollectiveAllGather ops and
// kernels against a fake CollectiveExecutor: shape functions, attr checks when the kernel is
// built, the missing-executor error, what each kernel hands the executor, the outputs it sets
// from the answer (also one that comes later, from another thread), and errors naming the node.
// The real collectives are tested with LocalCollectiveExecutor in runtime/collective/.
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/collective/fake_collectives.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::FakeCollectives;

using weft::testing::InferShapes;
using weft::testing::KernelRunner;

using AttrMap = std::map<std::string, proto::AttrValue>;

// group_size 3, group_key 4, instance_key 12, plus T and (when given) shape.
AttrMap Attrs(DataType dtype, const PartialShape* shape = nullptr, int group_size = 3) {
  AttrMap attrs = {{"T", MakeAttrValue(dtype)},
                   {"group_size", MakeAttrValue(group_size)},
                   {"group_key", MakeAttrValue(4)},
                   {"instance_key", MakeAttrValue(12)}};
  if (shape != nullptr) attrs["shape"] = MakeAttrValue(*shape);
  return attrs;
}

// A node of `op` named "member" with `inputs` inputs; not validated.
proto::NodeDef Node(const std::string& op, int inputs, const AttrMap& attrs) {
  proto::NodeDef node;
  node.set_name("member");
  node.set_op(op);
  for (int i = 0; i < inputs; ++i) node.add_input(StrCat("x", i));
  for (const auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  AddDefaultsToNodeDef(*ops::AllOps().LookUp(op).value(), &node);
  return node;
}

std::string Prefix(const std::string& op) { return StrCat("node 'member' (", op, ")"); }

// Builds the node's kernel on `device`.
StatusOr<std::unique_ptr<OpKernel>> MakeKernel(const proto::NodeDef& node, DeviceBase* device) {
  return AllKernels().CreateKernel(node, *ops::AllOps().LookUp(node.op()).value(), device);
}

// Runs `kernel` with `collectives` as the step's executor (ComputeAsync, waiting at most 20 s for
// done) and returns its status; its outputs go to `*outputs`.
Status RunWith(OpKernel& kernel, DeviceBase* device, std::vector<Tensor> inputs,
               CollectiveExecutor* collectives, std::vector<Tensor>* outputs) {
  OpKernelContext::Params params;
  params.kernel = &kernel;
  params.device = device;
  params.inputs = &inputs;
  params.collective_executor = collectives;
  OpKernelContext context(params);
  Notification done;
  kernel.AsAsync()->ComputeAsync(&context, [&] { done.Notify(); });
  if (!done.WaitForNotificationWithTimeout(std::chrono::seconds(20))) {
    return DeadlineExceeded("the kernel never finished");
  }
  *outputs = context.outputs();
  return context.status();
}

TEST(CollectiveGatherShapesTest, BroadcastSendFitsItsInputToTheShapeAttr) {
  PartialShape shape({2, 3});
  auto shapes = InferShapes("CollectiveBroadcastSend", {PartialShape({-1, 3})}, {},
                            Attrs(DataType::kFloat, &shape), "member");
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ((*shapes)[0], PartialShape({2, 3}));
  shapes = InferShapes("CollectiveBroadcastSend", {PartialShape({2, 4})}, {},
                       Attrs(DataType::kFloat, &shape), "member");
  EXPECT_TRUE(IsInvalidArgument(shapes.status())) << shapes.status();
  EXPECT_EQ(shapes.status().message().find(Prefix("CollectiveBroadcastSend")), 0u);
  EXPECT_NE(shapes.status().message().find("[2,4] does not fit the shape attr [2,3]"),
            std::string::npos)
      << shapes.status();
}

TEST(CollectiveGatherShapesTest, BroadcastRecvHasTheShapeAttr) {
  PartialShape shape({5});
  auto shapes = InferShapes("CollectiveBroadcastRecv", {}, {}, Attrs(DataType::kInt64, &shape));
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ((*shapes)[0], PartialShape({5}));
  shapes = InferShapes("CollectiveBroadcastRecv", {}, {}, Attrs(DataType::kInt64, &shape, 0));
  EXPECT_TRUE(IsInvalidArgument(shapes.status())) << shapes.status();
  EXPECT_NE(shapes.status().message().find("group_size must be at least 1"), std::string::npos);
}

TEST(CollectiveGatherShapesTest, AllGatherMultipliesDimensionZeroByTheGroupSize) {
  auto infer = [](PartialShape input) {
    return InferShapes("CollectiveAllGather", {std::move(input)}, {}, Attrs(DataType::kFloat),
                       "member");
  };
  EXPECT_EQ(infer(PartialShape({2, 7})).value()[0], PartialShape({6, 7}));
  EXPECT_EQ(infer(PartialShape({-1, 7})).value()[0], PartialShape({-1, 7}));
  EXPECT_EQ(infer(PartialShape()).value()[0], PartialShape());
  auto scalar = infer(PartialShape({}));
  EXPECT_TRUE(IsInvalidArgument(scalar.status())) << scalar.status();
  EXPECT_EQ(scalar.status().message().find(Prefix("CollectiveAllGather")), 0u);
  EXPECT_NE(scalar.status().message().find("rank at least 1"), std::string::npos);
}

TEST(CollectiveGatherOpsTest, BuildingChecksTheAttrs) {
  KernelRunner runner;
  PartialShape partial({-1, 2});
  for (const std::string op : {"CollectiveBroadcastSend", "CollectiveBroadcastRecv"}) {
    auto kernel = MakeKernel(
        Node(op, op == "CollectiveBroadcastSend" ? 1 : 0, Attrs(DataType::kFloat, &partial)),
        runner.device());
    EXPECT_TRUE(IsInvalidArgument(kernel.status())) << kernel.status();
    EXPECT_NE(kernel.status().message().find(Prefix(op)), std::string::npos) << kernel.status();
    EXPECT_NE(kernel.status().message().find("shape [?,2] must be fully defined"),
              std::string::npos)
        << kernel.status();
  }
  auto kernel = MakeKernel(Node("CollectiveAllGather", 1, Attrs(DataType::kFloat, nullptr, -2)),
                           runner.device());
  EXPECT_TRUE(IsInvalidArgument(kernel.status())) << kernel.status();
  EXPECT_NE(kernel.status().message().find(Prefix("CollectiveAllGather")), std::string::npos);
  EXPECT_NE(kernel.status().message().find("group_size must be at least 1, got -2"),
            std::string::npos);
}

TEST(CollectiveGatherOpsTest, WithoutACollectiveExecutorFailsPrecondition) {
  KernelRunner runner;
  PartialShape shape({2});
  Tensor input = Tensor::FromVector<float>({1, 2});
  auto send = runner.RunKernelOnly("CollectiveBroadcastSend", {input},
                                   Attrs(DataType::kFloat, &shape), "member");
  auto recv = runner.RunKernelOnly("CollectiveBroadcastRecv", {}, Attrs(DataType::kFloat, &shape),
                                   "member");
  auto gather =
      runner.RunKernelOnly("CollectiveAllGather", {input}, Attrs(DataType::kFloat), "member");
  for (const auto* result : {&send, &recv, &gather}) {
    EXPECT_TRUE(IsFailedPrecondition(result->status())) << result->status();
    EXPECT_EQ(result->status().message().find("node 'member' (Collective"), 0u) << result->status();
  }
}

template <typename T>
void CheckBroadcastThroughTheFake() {
  constexpr DataType kType = DataTypeToEnum<T>::value;
  SCOPED_TRACE(DataTypeName(kType));
  KernelRunner runner;
  PartialShape shape({2, 2});
  Tensor value = Tensor::FromVector<T>({1, 2, 3, 4}, TensorShape({2, 2}));
  // The sender hands its input over, unchanged, and outputs it.
  auto send = MakeKernel(Node("CollectiveBroadcastSend", 1, Attrs(kType, &shape)), runner.device());
  ASSERT_TRUE(send.ok()) << send.status();
  FakeCollectives collectives;
  std::vector<Tensor> outputs;
  Status status = RunWith(**send, runner.device(), {value}, &collectives, &outputs);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(collectives.call_, FakeCollectives::Call::kBroadcast);
  EXPECT_TRUE(collectives.is_source_);
  EXPECT_EQ(collectives.params_.group_size, 3);
  EXPECT_EQ(collectives.params_.group_key, 4);
  EXPECT_EQ(collectives.params_.instance_key, 12);
  EXPECT_EQ(collectives.expected_dtype_, kType);
  EXPECT_EQ(collectives.expected_shape_, TensorShape({2, 2}));
  EXPECT_EQ(collectives.device_, runner.device());
  ASSERT_EQ(collectives.inputs_.size(), 1u);
  EXPECT_TRUE(collectives.inputs_[0].SharesBufferWith(value));
  EXPECT_TRUE(outputs[0].SharesBufferWith(value));
  // A receiver declares what it expects and outputs what arrives.
  auto recv = MakeKernel(Node("CollectiveBroadcastRecv", 0, Attrs(kType, &shape)), runner.device());
  ASSERT_TRUE(recv.ok()) << recv.status();
  FakeCollectives receiving;
  receiving.result = value;
  status = RunWith(**recv, runner.device(), {}, &receiving, &outputs);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_FALSE(receiving.is_source_);
  EXPECT_EQ(receiving.expected_dtype_, kType);
  EXPECT_EQ(receiving.expected_shape_, TensorShape({2, 2}));
  EXPECT_TRUE(receiving.inputs_.empty());
  EXPECT_TRUE(outputs[0].SharesBufferWith(value));
}

TEST(CollectiveGatherOpsTest, BroadcastKernelsHandTheirPartToTheExecutor) {
  CheckBroadcastThroughTheFake<float>();
  CheckBroadcastThroughTheFake<double>();
  CheckBroadcastThroughTheFake<int32_t>();
  CheckBroadcastThroughTheFake<int64_t>();
}

TEST(CollectiveGatherOpsTest, BroadcastKernelsCheckWhatGoesAndWhatArrives) {
  KernelRunner runner;
  PartialShape shape({3});
  // An input of another shape than the attr fails before the collective is joined.
  auto send = MakeKernel(Node("CollectiveBroadcastSend", 1, Attrs(DataType::kFloat, &shape)),
                         runner.device());
  ASSERT_TRUE(send.ok()) << send.status();
  FakeCollectives collectives;
  std::vector<Tensor> outputs;
  Status status =
      RunWith(**send, runner.device(), {Tensor::FromVector<float>({1, 2})}, &collectives, &outputs);
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_EQ(status.message().find(Prefix("CollectiveBroadcastSend")), 0u) << status;
  EXPECT_NE(status.message().find("input of shape [2] differs from the shape attr [3]"),
            std::string::npos);
  EXPECT_EQ(collectives.call_, FakeCollectives::Call::kNone);
  // An executor delivering something else than declared is a bug, reported as one.
  auto recv = MakeKernel(Node("CollectiveBroadcastRecv", 0, Attrs(DataType::kFloat, &shape)),
                         runner.device());
  ASSERT_TRUE(recv.ok()) << recv.status();
  collectives.result = Tensor::FromVector<double>({1, 2, 3});
  status = RunWith(**recv, runner.device(), {}, &collectives, &outputs);
  EXPECT_TRUE(IsInternal(status)) << status;
  EXPECT_EQ(status.message().find(Prefix("CollectiveBroadcastRecv")), 0u) << status;
  // The executor's errors name the node.
  collectives.error = InvalidArgument("collective instance (group_key 4, instance_key 12): bad");
  status = RunWith(**recv, runner.device(), {}, &collectives, &outputs);
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_EQ(status.message().find(Prefix("CollectiveBroadcastRecv")), 0u) << status;
  EXPECT_NE(status.message().find("instance_key 12): bad"), std::string::npos) << status;
}

TEST(CollectiveGatherOpsTest, AllGatherHandsItsInputOverAndOutputsTheAnswer) {
  KernelRunner runner;
  auto kernel =
      MakeKernel(Node("CollectiveAllGather", 1, Attrs(DataType::kInt32)), runner.device());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  Tensor input = Tensor::FromVector<int32_t>({7, 8});
  FakeCollectives collectives;
  collectives.defer = true;
  collectives.result = Tensor::FromVector<int32_t>({1, 2, 7, 8, 5, 6});
  std::vector<Tensor> outputs;
  // Answered later, from another thread.
  std::thread later([&] {
    if (collectives.called.WaitForNotificationWithTimeout(std::chrono::seconds(20))) {
      collectives.Answer();
    }
  });
  Status status = RunWith(**kernel, runner.device(), {input}, &collectives, &outputs);
  later.join();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(collectives.call_, FakeCollectives::Call::kAllGather);
  EXPECT_EQ(collectives.params_.instance_key, 12);
  EXPECT_TRUE(collectives.inputs_[0].SharesBufferWith(input));
  EXPECT_TENSOR_EQ(outputs[0], collectives.result);
  collectives.defer = false;
  collectives.error = Aborted("collective ops aborted by: the step was cancelled");
  status = RunWith(**kernel, runner.device(), {input}, &collectives, &outputs);
  EXPECT_TRUE(IsAborted(status)) << status;
  EXPECT_EQ(status.message().find(Prefix("CollectiveAllGather")), 0u) << status;
}

}  // namespace
}  // namespace weft::kernels
