// StepExecutors' contract with its caller: the rendezvous and collectives a step borrows are
// aborted on the first error, and `done` (after which the caller destroys them) runs only once
// every abort of them has returned, however the other partitions' ends interleave with it.
#include "weft/runtime/step_executors.h"

#include <atomic>
#include <chrono>

#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/core/thread_pool.h"
#include "weft/framework/shape_inference.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/collective/local_collective_executor.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/local_rendezvous.h"

namespace weft {
namespace {

// Opened by the probing rendezvous's abort; the "Gate" kernel waits for it (bounded).
Notification* gate = nullptr;

class FailOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* /*context*/) override {
    return Internal("the failing partition failed");
  }
};

class GateOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* context) override {
    if (!gate->WaitForNotificationWithTimeout(std::chrono::seconds(10))) {
      return DeadlineExceeded("the gate never opened");
    }
    return context->SetOutput(0, Tensor::Scalar(1.0f));
  }
};

// A rendezvous whose abort lets the gated partition finish, then waits (bounded) to see whether
// the step ends while the abort is still running.
class ProbingRendezvous final : public Rendezvous {
 public:
  explicit ProbingRendezvous(const Notification* step_done) : step_done_(step_done) {}
  Status Send(const ParsedKey& key, const Args& send_args, const Tensor& value,
              bool is_dead) override {
    return local_.Send(key, send_args, value, is_dead);
  }
  void RecvAsync(const ParsedKey& key, const Args& recv_args, DoneCallback done) override {
    local_.RecvAsync(key, recv_args, std::move(done));
  }
  void StartAbort(const Status& status) override {
    aborts_.fetch_add(1);
    local_.StartAbort(status);
    gate->Notify();
    if (step_done_->WaitForNotificationWithTimeout(std::chrono::milliseconds(200))) {
      step_ended_during_abort_.store(true);
    }
  }
  int aborts() const { return aborts_.load(); }
  bool step_ended_during_abort() const { return step_ended_during_abort_.load(); }

 private:
  const Notification* const step_done_;
  LocalRendezvous local_;
  std::atomic<int> aborts_{0};
  std::atomic<bool> step_ended_during_abort_{false};
};

proto::NodeDef NodeOf(const std::string& name, const std::string& op) {
  proto::NodeDef node;
  node.set_name(name);
  node.set_op(op);
  return node;
}

TEST(StepExecutorsTest, TheStepEndsOnlyAfterTheAbortOfWhatItBorrowed) {
  // CPU:0 fails at once; CPU:1 waits for the gate, which the rendezvous's abort opens: the other
  // partition thus ends while the failing one is still aborting, and `done` must wait for that.
  OpRegistry ops;
  auto scalar = [](InferenceContext& c) { return shape_fn::ScalarShape(c); };
  ops.RegisterOrDie(OpDefBuilder("Fail").Output("y: float32").SetShapeFn(scalar));
  ops.RegisterOrDie(OpDefBuilder("Gate").Output("y: float32").SetShapeFn(scalar));
  ops::RegisterFunctionOps(ops);
  KernelRegistry kernels;
  kernels::RegisterFunctionKernels(kernels);
  kernels.Register<FailOp>(KernelDef("Fail", "CPU"));
  kernels.Register<GateOp>(KernelDef("Gate", "CPU"));
  const std::string cpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
  const std::string cpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
  std::vector<std::unique_ptr<Device>> device_list;
  device_list.push_back(std::make_unique<CpuDevice>(cpu0, 1));
  device_list.push_back(std::make_unique<CpuDevice>(cpu1, 1));
  DeviceMgr devices(std::move(device_list));
  std::map<std::string, proto::GraphDef> partitions;
  *partitions[cpu0].add_node() = NodeOf("failing", "Fail");
  *partitions[cpu1].add_node() = NodeOf("gated", "Gate");
  auto executors = StepExecutors::CreateFromPartitions(partitions, devices, ops, kernels);
  ASSERT_TRUE(executors.ok()) << executors.status();
  ThreadPool pool("inter_op", 2);

  for (int step = 1; step <= 3; ++step) {
    Notification opened;
    gate = &opened;
    Notification step_done;
    Status step_status;
    {
      CallFrame frame({}, 0);
      CancellationManager cancellation;
      ProbingRendezvous rendezvous(&step_done);
      LocalCollectiveExecutor collectives;
      StepExecutors::RunArgs args;
      args.step_id = step;
      args.call_frame = &frame;
      args.cancellation_manager = &cancellation;
      args.runner = [&pool](std::function<void()> fn) { pool.Schedule(std::move(fn)); };
      args.rendezvous = &rendezvous;
      args.collective_executor = &collectives;
      (*executors)->RunAsync(args, [&](const Status& status) {
        step_status = status;
        step_done.Notify();
      });
      ASSERT_TRUE(step_done.WaitForNotificationWithTimeout(std::chrono::seconds(20)));
      EXPECT_GE(rendezvous.aborts(), 1);
      EXPECT_FALSE(rendezvous.step_ended_during_abort()) << "step " << step;
    }
    EXPECT_TRUE(IsInternal(step_status)) << step_status;
    EXPECT_NE(step_status.message().find("the failing partition failed"), std::string::npos)
        << step_status;
  }
  gate = nullptr;
}

}  // namespace
}  // namespace weft
