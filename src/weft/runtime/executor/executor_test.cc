#include "weft/runtime/executor/executor.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "weft/core/allocator.h"
#include "weft/core/mutex.h"
#include "weft/core/thread_pool.h"
#include "weft/framework/shape_inference.h"
#include "weft/graph/graph_def_io.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/cpu_device.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

// Test ops with kernels whose timing and failures the tests control.
class ScalarOp final : public OpKernel {
 public:
  explicit ScalarOp(OpKernelConstruction* c) : OpKernel(c) {
    c->SetStatus(c->GetAttr("value", &value_));
  }
  Status Compute(OpKernelContext* context) override {
    return context->SetOutput(0, Tensor::Scalar(value_));
  }
  bool IsCheap() const override { return true; }

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

struct SleepLog {
  Mutex mu;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> intervals WEFT_GUARDED_BY(mu);
};
SleepLog* sleep_log = nullptr;

class SleepOp final : public OpKernel {
 public:
  explicit SleepOp(OpKernelConstruction* c) : OpKernel(c) {
    c->SetStatus(c->GetAttr("millis", &millis_));
  }
  Status Compute(OpKernelContext* context) override {
    auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(millis_));
    if (sleep_log != nullptr) {
      MutexLock lock(sleep_log->mu);
      sleep_log->intervals.emplace_back(start, Clock::now());
    }
    return context->SetOutput(0, context->input(0));
  }

 private:
  int millis_ = 0;
};

class FailOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override { return InvalidArgument("boom"); }
};

// Completes only when the step is cancelled, like a Recv whose sender never comes.
class WaitForCancelOp final : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    CancellationManager* cm = context->cancellation_manager();
    auto finish = [context, done] {
      context->SetStatus(Cancelled("waiting op cancelled"));
      done();
    };
    if (!cm->RegisterCallback(cm->NewToken(), finish)) finish();
  }
};

// Completes on another thread after a short delay, passing its input through.
class DelayedIdentityOp final : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    std::thread([context, done] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      context->SetStatus(context->SetOutput(0, context->input(0)));
      done();
    }).detach();
  }
};

class BigOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* context) override {
    Tensor* out = nullptr;
    return context->AllocateOutput(0, TensorShape({1 << 20}), &out);  // 4 MB
  }
};

class SizeOfOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* context) override {
    return context->SetOutput(0,
                              Tensor::Scalar(static_cast<float>(context->input(0).NumElements())));
  }
};

class ExecutorTest : public ::testing::Test {
 protected:
  ExecutorTest() : device_("/job:localhost/replica:0/task:0/device:CPU:0", 1), graph_(ops_) {
    auto scalar = [](InferenceContext& c) { return shape_fn::ScalarShape(c); };
    ops_.RegisterOrDie(
        OpDefBuilder("Scalar").Output("y: float32").Attr("value: float").SetShapeFn(scalar));
    ops_.RegisterOrDie(OpDefBuilder("Add")
                           .Input("x: float32")
                           .Input("y: float32")
                           .Output("z: float32")
                           .SetShapeFn(scalar));
    ops_.RegisterOrDie(OpDefBuilder("Sleep")
                           .Input("x: float32")
                           .Output("y: float32")
                           .Attr("millis: int")
                           .SetShapeFn(shape_fn::UnchangedShape));
    ops_.RegisterOrDie(OpDefBuilder("Fail").Input("x: float32").Output("y: float32"));
    ops_.RegisterOrDie(OpDefBuilder("WaitForCancel").Input("x: float32").Output("y: float32"));
    ops_.RegisterOrDie(OpDefBuilder("DelayedIdentity").Input("x: float32").Output("y: float32"));
    ops_.RegisterOrDie(OpDefBuilder("Big").Output("y: float32"));
    ops_.RegisterOrDie(OpDefBuilder("SizeOf").Input("x: float32").Output("y: float32"));
    ops::RegisterFunctionOps(ops_);  // _Arg and _Retval
    kernels::RegisterFunctionKernels(kernels_);
    kernels_.Register<ScalarOp>(KernelDef("Scalar", "CPU"));
    kernels_.Register<AddOp>(KernelDef("Add", "CPU"));
    kernels_.Register<SleepOp>(KernelDef("Sleep", "CPU"));
    kernels_.Register<FailOp>(KernelDef("Fail", "CPU"));
    kernels_.Register<WaitForCancelOp>(KernelDef("WaitForCancel", "CPU"));
    kernels_.Register<DelayedIdentityOp>(KernelDef("DelayedIdentity", "CPU"));
    kernels_.Register<BigOp>(KernelDef("Big", "CPU"));
    kernels_.Register<SizeOfOp>(KernelDef("SizeOf", "CPU"));
  }

  Node* Add(const std::string& op, const std::string& name, std::vector<NodeOutput> inputs,
            std::map<std::string, proto::AttrValue> attrs = {}, std::vector<Node*> controls = {}) {
    proto::NodeDef def;
    def.set_name(name);
    def.set_op(op);
    for (auto& [key, value] : attrs) (*def.mutable_attr())[key] = value;
    StatusOr<Node*> node = graph_.AddNode(def, inputs, controls);
    EXPECT_TRUE(node.ok()) << node.status();
    return node.ok() ? *node : nullptr;
  }
  Node* Retval(Node* source, int index) {
    return Add("_Retval", "retval" + std::to_string(index), {{source, 0}},
               {{"T", MakeAttrValue(DataType::kFloat)}, {"index", MakeAttrValue(index)}});
  }

  // Runs the graph built so far once with `threads` inter-op threads; returns the retvals.
  StatusOr<std::vector<Tensor>> RunGraph(int threads, int num_retvals) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Graph> copy, CopyGraph(graph_));
    ExecutorParams params{&device_, &kernels_};
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                          Executor::Create(params, std::move(copy)));
    ThreadPool pool("inter_op", threads);
    CallFrame frame({}, num_retvals);
    CancellationManager cancellation;
    Executor::Args args;
    args.call_frame = &frame;
    args.cancellation_manager = &cancellation;
    args.runner = [&pool](std::function<void()> fn) { pool.Schedule(std::move(fn)); };
    WEFT_RETURN_IF_ERROR(executor->Run(args));
    return frame.ConsumeRetvals();
  }

  CpuDevice device_;
  OpRegistry ops_;
  KernelRegistry kernels_;
  Graph graph_;
};

TEST_F(ExecutorTest, RunsAChainAndAFan) {
  Node* one = Add("Scalar", "one", {}, {{"value", MakeAttrValue(1.0f)}});
  Node* sum = one;
  for (int i = 0; i < 100; ++i) sum = Add("Add", "chain" + std::to_string(i), {{sum, 0}, {one, 0}});
  std::vector<Node*> fan;
  for (int i = 0; i < 50; ++i)
    fan.push_back(Add("Add", "fan" + std::to_string(i), {{one, 0}, {one, 0}}));
  Node* total = fan[0];
  for (int i = 1; i < 50; ++i)
    total = Add("Add", "total" + std::to_string(i), {{total, 0}, {fan[i], 0}});
  Retval(sum, 0);
  Retval(total, 1);
  for (int threads : {1, 2}) {
    auto result = RunGraph(threads, 2);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(*(*result)[0].data<float>(), 101.0f);
    EXPECT_EQ(*(*result)[1].data<float>(), 100.0f);
  }
}

TEST_F(ExecutorTest, IndependentSlowNodesOverlap) {
  SleepLog log;
  sleep_log = &log;
  Node* one = Add("Scalar", "one", {}, {{"value", MakeAttrValue(1.0f)}});
  Node* a = Add("Sleep", "a", {{one, 0}}, {{"millis", MakeAttrValue(100)}});
  Node* b = Add("Sleep", "b", {{one, 0}}, {{"millis", MakeAttrValue(100)}});
  Retval(Add("Add", "sum", {{a, 0}, {b, 0}}), 0);
  auto start = Clock::now();
  auto result = RunGraph(2, 1);
  auto elapsed = Clock::now() - start;
  sleep_log = nullptr;
  ASSERT_TRUE(result.ok()) << result.status();
  MutexLock lock(log.mu);
  ASSERT_EQ(log.intervals.size(), 2u);
  // The two sleeps overlap in time, so the step takes about one sleep, not two.
  auto [a_start, a_end] = log.intervals[0];
  auto [b_start, b_end] = log.intervals[1];
  EXPECT_LT(std::max(a_start, b_start), std::min(a_end, b_end));
  EXPECT_LT(elapsed, std::chrono::milliseconds(180));
}

TEST_F(ExecutorTest, FirstErrorCancelsTheRestAndNamesTheNode) {
  Node* one = Add("Scalar", "one", {}, {{"value", MakeAttrValue(1.0f)}});
  Node* waiting = Add("WaitForCancel", "waiting", {{one, 0}});
  Node* slow = Add("Sleep", "slow", {{one, 0}}, {{"millis", MakeAttrValue(20)}});
  Node* failing = Add("Fail", "failing", {{slow, 0}});
  Retval(Add("Add", "after", {{waiting, 0}, {failing, 0}}), 0);
  auto start = Clock::now();
  auto result = RunGraph(2, 1);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));  // the waiting node did not hang
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(IsInvalidArgument(result.status())) << result.status();
  EXPECT_NE(result.status().message().find("node 'failing' (Fail)"), std::string::npos)
      << result.status();
  EXPECT_NE(result.status().message().find("boom"), std::string::npos);
}

TEST_F(ExecutorTest, AsyncKernelCompletesThroughItsCallback) {
  Node* one = Add("Scalar", "one", {}, {{"value", MakeAttrValue(3.0f)}});
  Node* later = Add("DelayedIdentity", "later", {{one, 0}});
  Retval(Add("Add", "sum", {{later, 0}, {one, 0}}), 0);
  auto result = RunGraph(1, 1);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*(*result)[0].data<float>(), 6.0f);
}

TEST_F(ExecutorTest, IntermediateTensorsAreFreedAfterTheirLastConsumer) {
  // big1 -> size1, then (after size1) big2 -> size2: big1 must be gone before big2 exists.
  Node* big1 = Add("Big", "big1", {});
  Node* size1 = Add("SizeOf", "size1", {{big1, 0}});
  Node* big2 = Add("Big", "big2", {}, {}, {size1});
  Node* size2 = Add("SizeOf", "size2", {{big2, 0}});
  Retval(Add("Add", "sum", {{size1, 0}, {size2, 0}}), 0);
  int64_t before = GetAllocatorStats().bytes_in_use;
  ResetPeakBytesInUse();
  auto result = RunGraph(1, 1);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*(*result)[0].data<float>(), 2.0f * (1 << 20));
  int64_t peak = GetAllocatorStats().peak_bytes_in_use - before;
  EXPECT_GE(peak, 4 << 20);
  EXPECT_LT(peak, 8 << 20) << "both 4 MB tensors were alive at once";
}

TEST_F(ExecutorTest, MissingKernelIsReportedAtCreation) {
  ops_.RegisterOrDie(OpDefBuilder("NoKernel").Output("y: float32"));
  Retval(Add("NoKernel", "orphan", {}), 0);
  auto result = RunGraph(1, 1);
  EXPECT_TRUE(IsNotFound(result.status())) << result.status();
  EXPECT_NE(result.status().message().find("orphan"), std::string::npos);
}

}  // namespace
}  // namespace weft
