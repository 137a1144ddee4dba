// Tests of the CollectiveAllReduce op and kernel against a fake CollectiveExecutor: the shape
// function, attr validation, the missing-executor error, and that the kernel hands its inputs
// and attrs to the executor and sets the outputs it calls back with (also from another thread).
// The real reduction is tested with LocalCollectiveExecutor in runtime/collective/.
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/framework/collective.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/shape_inference.h"
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

constexpr char kNodePrefix[] = "node 'allreduce' (CollectiveAllReduce)";

std::map<std::string, proto::AttrValue> Attrs(int group_size, std::string final_op = "Id") {
  return {{"group_size", MakeAttrValue(group_size)},
          {"group_key", MakeAttrValue(3)},
          {"instance_key", MakeAttrValue(11)},
          {"final_op", MakeAttrValue(final_op)}};
}

// A CollectiveAllReduce node named "allreduce" over `count` tensors of `dtype`; not validated.
proto::NodeDef Node(DataType dtype, int count,
                    const std::map<std::string, proto::AttrValue>& attrs) {
  proto::NodeDef node;
  node.set_name("allreduce");
  node.set_op("CollectiveAllReduce");
  for (int i = 0; i < count; ++i) node.add_input(StrCat("x", i));
  for (const auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  (*node.mutable_attr())["T"] = MakeAttrValue(dtype);
  (*node.mutable_attr())["N"] = MakeAttrValue(count);
  AddDefaultsToNodeDef(*ops::AllOps().LookUp("CollectiveAllReduce").value(), &node);
  return node;
}

StatusOr<std::unique_ptr<OpKernel>> MakeKernel(const proto::NodeDef& node, DeviceBase* device) {
  const OpDef* op = ops::AllOps().LookUp("CollectiveAllReduce").value();
  return AllKernels().CreateKernel(node, *op, device);
}

TEST(CollectiveAllReduceShapeTest, OutputsHaveTheInputShapes) {
  // weft::testing::InferShapes sizes outputs by the op's output args, not by N, so run the shape
  // function here with the expanded count.
  proto::NodeDef node = Node(DataType::kFloat, 3, Attrs(2));
  const OpDef* op = ops::AllOps().LookUp("CollectiveAllReduce").value();
  std::vector<PartialShape> inputs = {PartialShape({2, 3}), PartialShape(), PartialShape({-1, 4})};
  InferenceContext context(node, *op, inputs, {}, 3);
  ASSERT_TRUE(op->shape_fn(context).ok());
  EXPECT_EQ(context.outputs(), inputs);
}

TEST(CollectiveAllReduceShapeTest, RejectsAGroupOfNone) {
  auto attrs = Attrs(0);
  attrs["N"] = MakeAttrValue(1);
  attrs["T"] = MakeAttrValue(DataType::kFloat);
  auto shapes = InferShapes("CollectiveAllReduce", {PartialShape({2})}, {}, attrs, "allreduce");
  EXPECT_TRUE(IsInvalidArgument(shapes.status())) << shapes.status();
  EXPECT_NE(shapes.status().message().find(kNodePrefix), std::string::npos) << shapes.status();
  EXPECT_NE(shapes.status().message().find("group_size"), std::string::npos) << shapes.status();
}

TEST(CollectiveAllReduceOpTest, WithoutACollectiveExecutorFailsPrecondition) {
  KernelRunner runner;
  auto result = runner.RunKernelOnly("CollectiveAllReduce", {Tensor::FromVector<float>({1, 2})},
                                     Attrs(2), "allreduce");
  EXPECT_TRUE(IsFailedPrecondition(result.status())) << result.status();
  EXPECT_EQ(result.status().message().find(kNodePrefix), 0u) << result.status();
}

TEST(CollectiveAllReduceOpTest, BadAttrsAreInvalidArgumentsNamingTheNode) {
  KernelRunner runner;
  // Through the runner: group_size 0 fails the shape function, or the kernel when run alone.
  auto result = runner.Run("CollectiveAllReduce", {Tensor::FromVector<float>({1})}, Attrs(0));
  EXPECT_TRUE(IsInvalidArgument(result.status())) << result.status();
  result = runner.RunKernelOnly("CollectiveAllReduce", {Tensor::FromVector<float>({1})}, Attrs(-3),
                                "allreduce");
  EXPECT_TRUE(IsInvalidArgument(result.status())) << result.status();
  EXPECT_NE(result.status().message().find(kNodePrefix), std::string::npos) << result.status();
  EXPECT_NE(result.status().message().find("group_size must be at least 1, got -3"),
            std::string::npos);
  // An unknown final_op is refused by node validation; a kernel built without it checks too.
  result = runner.RunKernelOnly("CollectiveAllReduce", {Tensor::FromVector<float>({1})},
                                Attrs(2, "Max"), "allreduce");
  EXPECT_TRUE(IsInvalidArgument(result.status())) << result.status();
  auto kernel = MakeKernel(Node(DataType::kFloat, 1, Attrs(2, "Max")), runner.device());
  EXPECT_TRUE(IsInvalidArgument(kernel.status())) << kernel.status();
  EXPECT_NE(kernel.status().message().find(kNodePrefix), std::string::npos) << kernel.status();
  EXPECT_NE(kernel.status().message().find("final_op 'Max'"), std::string::npos);
  auto attrs = Attrs(2);
  attrs["merge_op"] = MakeAttrValue("Mul");
  kernel = MakeKernel(Node(DataType::kFloat, 1, attrs), runner.device());
  EXPECT_TRUE(IsInvalidArgument(kernel.status())) << kernel.status();
  EXPECT_NE(kernel.status().message().find("merge_op 'Mul'"), std::string::npos);
  // Only float32 and float64.
  result = runner.RunKernelOnly("CollectiveAllReduce", {Tensor::FromVector<int32_t>({1})}, Attrs(2),
                                "allreduce");
  EXPECT_FALSE(result.ok());
}

// Runs the kernel on a bucket of `count` tensors with a fake executor and checks what it passed
// and what it set.
template <typename T>
void CheckPassesTheBucketThrough(int count) {
  constexpr DataType kType = DataTypeToEnum<T>::value;
  SCOPED_TRACE(StrCat(DataTypeName(kType), " x ", count));
  KernelRunner runner;
  auto kernel = MakeKernel(Node(kType, count, Attrs(4, "Div")), runner.device());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  std::vector<Tensor> inputs;
  for (int i = 0; i < count; ++i) {
    inputs.push_back(i % 2 == 0 ? Tensor::FromVector<T>({T(i), T(1.5), T(-2)})
                                : Tensor::Scalar<T>(4));
  }
  FakeCollectives collectives;
  OpKernelContext::Params params;
  params.kernel = kernel->get();
  params.device = runner.device();
  params.inputs = &inputs;
  params.collective_executor = &collectives;
  OpKernelContext context(params);
  ASSERT_TRUE((*kernel)->Compute(&context).ok()) << context.status();
  EXPECT_EQ(collectives.params_.group_size, 4);
  EXPECT_EQ(collectives.params_.group_key, 3);
  EXPECT_EQ(collectives.params_.instance_key, 11);
  EXPECT_EQ(collectives.params_.merge_op, "Add");
  EXPECT_EQ(collectives.params_.final_op, "Div");
  EXPECT_EQ(collectives.device_, runner.device());
  ASSERT_EQ(collectives.inputs_.size(), static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    EXPECT_TRUE(collectives.inputs_[i].SharesBufferWith(inputs[i]));  // no copy
    Tensor expected(kType, inputs[i].shape());
    for (int64_t e = 0; e < expected.NumElements(); ++e) {
      expected.data<T>()[e] = inputs[i].data<T>()[e] * 2;
    }
    EXPECT_TENSOR_EQ(context.outputs()[i], expected);
  }
}

TEST(CollectiveAllReduceOpTest, HandsTheBucketToTheExecutorAndSetsItsOutputs) {
  CheckPassesTheBucketThrough<float>(1);
  CheckPassesTheBucketThrough<float>(3);
  CheckPassesTheBucketThrough<double>(1);
  CheckPassesTheBucketThrough<double>(2);
}

TEST(CollectiveAllReduceOpTest, ErrorsFromTheExecutorNameTheNode) {
  KernelRunner runner;
  auto kernel = MakeKernel(Node(DataType::kFloat, 1, Attrs(2)), runner.device());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  std::vector<Tensor> inputs = {Tensor::FromVector<float>({1})};
  FakeCollectives collectives;
  collectives.error = InvalidArgument("collective instance (group_key 3, instance_key 11): bad");
  OpKernelContext::Params params;
  params.kernel = kernel->get();
  params.device = runner.device();
  params.inputs = &inputs;
  params.collective_executor = &collectives;
  OpKernelContext context(params);
  Status status = (*kernel)->Compute(&context);
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_EQ(status.message().find(kNodePrefix), 0u) << status;
  EXPECT_NE(status.message().find("instance_key 11): bad"), std::string::npos) << status;
}

TEST(CollectiveAllReduceOpTest, CompletesWhenTheExecutorCallsBackLater) {
  KernelRunner runner;
  auto kernel = MakeKernel(Node(DataType::kDouble, 1, Attrs(2)), runner.device());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  std::vector<Tensor> inputs = {Tensor::FromVector<double>({1, -4})};
  FakeCollectives collectives;
  collectives.defer = true;
  collectives.scale = 3;
  OpKernelContext::Params params;
  params.kernel = kernel->get();
  params.device = runner.device();
  params.inputs = &inputs;
  params.collective_executor = &collectives;
  OpKernelContext context(params);
  Notification done;
  (*kernel)->AsAsync()->ComputeAsync(&context, [&] { done.Notify(); });
  EXPECT_FALSE(done.HasBeenNotified());
  std::thread later([&] { collectives.Answer(); });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(std::chrono::seconds(20)));
  later.join();
  ASSERT_TRUE(context.status().ok()) << context.status();
  EXPECT_TENSOR_EQ(context.outputs()[0], Tensor::FromVector<double>({3, -12}));
}

}  // namespace
}  // namespace weft::kernels
