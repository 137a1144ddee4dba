// The executor on a device with a stream (TEST_ARENA: kernels and copies complete on a thread of
// its own). A gate enqueued on the stream holds every later kernel back, so the tests see that
// launching returns before the kernels run, that values still arrive in stream order, and that a
// buffer freed off the stream is not released before the stream passes the free.
#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/core/thread_pool.h"
#include "weft/framework/copy_tensor.h"
#include "weft/framework/shape_inference.h"
#include "weft/graph/graph_def_io.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/executor/executor.h"
#include "weft/testing/test_arena_device.h"

namespace weft {
namespace {

using weft::testing::kTestArenaDeviceType;

class ScalarOp final : public OpKernel {
 public:
  explicit ScalarOp(OpKernelConstruction* c) : OpKernel(c) {
    c->SetStatus(c->GetAttr("value", &value_));
  }
  Status Compute(OpKernelContext* context) override {
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape(), &out));
    *out->data<float>() = value_;
    return Status::OK();
  }

 private:
  float value_ = 0;
};

class AddOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* context) override {
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape(), &out));
    *out->data<float>() = *context->input(0).data<float>() + *context->input(1).data<float>();
    return Status::OK();
  }
};

class FailOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override { return InvalidArgument("boom"); }
};

// Completes on a thread of its own, like a Recv whose value arrives later.
class ThreadedIdentityOp final : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    std::thread([context, done] {
      context->SetStatus(context->SetOutput(0, context->input(0)));
      done();
    }).detach();
  }
};

class ExecutorStreamTest : public ::testing::Test {
 protected:
  ExecutorStreamTest()
      : device_(weft::testing::NewTestArenaDevice(
            "/job:localhost/replica:0/task:0/device:TEST_ARENA:0")),
        graph_(ops_) {
    auto scalar = [](InferenceContext& c) { return shape_fn::ScalarShape(c); };
    ops_.RegisterOrDie(
        OpDefBuilder("Scalar").Output("y: float32").Attr("value: float").SetShapeFn(scalar));
    ops_.RegisterOrDie(
        OpDefBuilder("Add").Input("x: float32").Input("y: float32").Output("z: float32"));
    ops_.RegisterOrDie(OpDefBuilder("Fail").Input("x: float32").Output("y: float32"));
    ops_.RegisterOrDie(OpDefBuilder("ThreadedIdentity").Input("x: float32").Output("y: float32"));
    ops::RegisterFunctionOps(ops_);
    kernels::RegisterFunctionKernels(kernels_);
    kernels_.CopyDeviceKernels("CPU", kTestArenaDeviceType);
    kernels_.Register<ScalarOp>(KernelDef("Scalar", kTestArenaDeviceType));
    kernels_.Register<AddOp>(KernelDef("Add", kTestArenaDeviceType));
    kernels_.Register<FailOp>(KernelDef("Fail", kTestArenaDeviceType));
    kernels_.Register<ThreadedIdentityOp>(KernelDef("ThreadedIdentity", kTestArenaDeviceType));
  }

  Node* Add(const std::string& op, const std::string& name, std::vector<NodeOutput> inputs,
            std::map<std::string, proto::AttrValue> attrs = {}) {
    proto::NodeDef def;
    def.set_name(name);
    def.set_op(op);
    for (auto& [key, value] : attrs) (*def.mutable_attr())[key] = value;
    StatusOr<Node*> node = graph_.AddNode(def, inputs, {});
    EXPECT_TRUE(node.ok()) << node.status();
    return node.ok() ? *node : nullptr;
  }
  Node* One() { return Add("Scalar", "one", {}, {{"value", MakeAttrValue(1.0f)}}); }
  void Retval(Node* source) {
    Add("_Retval", "retval", {{source, 0}},
        {{"T", MakeAttrValue(DataType::kFloat)}, {"index", MakeAttrValue(0)}});
  }

  // Holds back everything enqueued on the stream after it until `gate` is notified.
  void CloseGate(Notification& gate) {
    device_->device_context()->Enqueue([&gate] { gate.WaitForNotification(); });
  }

  // Launches one step of the graph with the stream held back by `gate`, checks that the step
  // cannot end before the gate opens, then opens it and returns the step's result.
  StatusOr<float> RunBehindGate() {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Graph> copy, CopyGraph(graph_));
    ExecutorParams params{device_.get(), &kernels_};
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                          Executor::Create(params, std::move(copy)));
    ThreadPool pool("inter_op", 2);
    CallFrame frame({}, 1);
    CancellationManager cancellation;
    Executor::Args args;
    args.call_frame = &frame;
    args.cancellation_manager = &cancellation;
    args.runner = [&pool](std::function<void()> fn) { pool.Schedule(std::move(fn)); };
    Notification gate, finished;
    Status status;
    CloseGate(gate);
    executor->RunAsync(args, [&](const Status& s) {
      status = s;
      finished.Notify();
    });
    EXPECT_FALSE(finished.HasBeenNotified()) << "the step ended before its kernels could run";
    gate.Notify();
    finished.WaitForNotification();
    WEFT_RETURN_IF_ERROR(status);
    WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> retvals, frame.ConsumeRetvals());
    return *retvals[0].data<float>();
  }

  std::unique_ptr<Device> device_;
  OpRegistry ops_;
  KernelRegistry kernels_;
  Graph graph_;
};

TEST_F(ExecutorStreamTest, AChainAndAFanLaunchAheadAndRunInStreamOrder) {
  Node* one = One();
  Node* sum = one;
  for (int i = 0; i < 100; ++i) sum = Add("Add", "chain" + std::to_string(i), {{sum, 0}, {one, 0}});
  Node* fan = sum;
  for (int i = 0; i < 20; ++i) fan = Add("Add", "fan" + std::to_string(i), {{fan, 0}, {sum, 0}});
  Retval(fan);
  auto result = RunBehindGate();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, 101.0f * 21);
}

TEST_F(ExecutorStreamTest, AnAsyncKernelStartsAfterItsProducersAndItsConsumersAfterIt) {
  Node* one = One();
  Node* two = Add("Add", "two", {{one, 0}, {one, 0}});
  Node* passed = Add("ThreadedIdentity", "passed", {{two, 0}});
  Node* three = Add("Add", "three", {{passed, 0}, {one, 0}});
  Retval(three);
  auto result = RunBehindGate();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, 3.0f);
}

TEST_F(ExecutorStreamTest, AKernelFailingOnTheStreamEndsTheStepNamingIt) {
  Node* one = One();
  Node* failed = Add("Fail", "bad_node", {{one, 0}});
  Node* after = Add("Add", "after", {{failed, 0}, {one, 0}});
  Retval(after);
  auto result = RunBehindGate();
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("bad_node"), std::string::npos) << result.status();
  EXPECT_NE(result.status().message().find("boom"), std::string::npos) << result.status();
}

TEST_F(ExecutorStreamTest, CopiesIntoTheDeviceWaitForTheWorkEnqueuedBeforeThem) {
  Tensor host = Tensor::Scalar(7.0f);
  Notification gate, copied;
  CloseGate(gate);
  Tensor on_device;
  CopyTensorAsync(nullptr, device_.get(), {}, host, [&](const Status& status, Tensor copy) {
    EXPECT_TRUE(status.ok()) << status;
    on_device = std::move(copy);
    copied.Notify();
  });
  EXPECT_FALSE(copied.HasBeenNotified());
  gate.Notify();
  copied.WaitForNotification();
  EXPECT_EQ(on_device.allocator(), device_->GetAllocator());
  EXPECT_EQ(*on_device.data<float>(), 7.0f);
}

TEST_F(ExecutorStreamTest, ABufferFreedOffTheStreamIsReleasedOnlyWhenTheStreamPassesIt) {
  Allocator* arena = device_->GetAllocator();
  const int64_t before = arena->GetStats().bytes_in_use;
  auto tensor = Tensor::Allocate(arena, DataType::kFloat, TensorShape({1024}));
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(arena->GetStats().bytes_in_use, before + 4096);
  Notification gate, passed;
  CloseGate(gate);
  *tensor = Tensor();  // the last reference, dropped on this thread while the stream is held
  EXPECT_EQ(arena->GetStats().bytes_in_use, before + 4096);
  device_->device_context()->ThenExecute([&passed] { passed.Notify(); });
  gate.Notify();
  passed.WaitForNotification();
  EXPECT_EQ(arena->GetStats().bytes_in_use, before);
}

}  // namespace
}  // namespace weft
