// Tests for the _Send and _Recv kernels. KernelRunner cannot hand a kernel a rendezvous, so these
// tests build the OpKernelContext themselves over a small fake Rendezvous that records what it
// was given (the real LocalRendezvous lives in runtime/, which kernels do not depend on).
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/mutex.h"
#include "weft/core/notification.h"
#include "weft/framework/cancellation.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/rendezvous.h"
#include "weft/framework/resource_handle.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/cpu_device.h"
#include "weft/testing/kernel_runner.h"

namespace weft::kernels {
namespace {

using ::testing::HasSubstr;

constexpr char kSrc[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kDst[] = "/job:worker/replica:0/task:1/device:CPU:0";

// Keeps sent values and waiting receivers per key; records the args each side passed.
class FakeRendezvous final : public Rendezvous {
 public:
  Status Send(const ParsedKey& key, const Args& send_args, const Tensor& value,
              bool is_dead) override {
    DoneCallback waiter;
    Args recv_args;
    {
      MutexLock lock(mu_);
      if (!abort_.ok()) return abort_;
      sent_keys_.push_back(key.full_key);
      last_send_args_ = send_args;
      auto it = waiters_.find(key.full_key);
      if (it == waiters_.end()) {
        values_[key.full_key] = {value, is_dead};
        return Status::OK();
      }
      std::tie(recv_args, waiter) = std::move(it->second);
      waiters_.erase(it);
    }
    waiter(Status::OK(), send_args, recv_args, value, is_dead);
    return Status::OK();
  }

  void RecvAsync(const ParsedKey& key, const Args& recv_args, DoneCallback done) override {
    MutexLock lock(mu_);
    last_recv_args_ = recv_args;
    if (!abort_.ok()) {
      Status abort = abort_;
      lock.Unlock();
      done(abort, Args(), recv_args, Tensor(), false);
      return;
    }
    auto it = values_.find(key.full_key);
    if (it == values_.end()) {
      waiters_[key.full_key] = {recv_args, std::move(done)};
      return;
    }
    auto [value, is_dead] = it->second;
    values_.erase(it);
    const Args send_args = last_send_args_;
    lock.Unlock();
    done(Status::OK(), send_args, recv_args, value, is_dead);
  }

  void StartAbort(const Status& status) override {
    std::map<std::string, std::pair<Args, DoneCallback>> waiters;
    {
      MutexLock lock(mu_);
      abort_ = status;
      waiters.swap(waiters_);
    }
    for (auto& [key, waiter] : waiters)
      waiter.second(status, Args(), waiter.first, Tensor(), false);
  }

  std::vector<std::string> sent_keys() {
    MutexLock lock(mu_);
    return sent_keys_;
  }
  Args last_send_args() {
    MutexLock lock(mu_);
    return last_send_args_;
  }
  Args last_recv_args() {
    MutexLock lock(mu_);
    return last_recv_args_;
  }

 private:
  Mutex mu_;
  Status abort_ WEFT_GUARDED_BY(mu_);
  std::map<std::string, std::pair<Tensor, bool>> values_ WEFT_GUARDED_BY(mu_);
  std::map<std::string, std::pair<Args, DoneCallback>> waiters_ WEFT_GUARDED_BY(mu_);
  std::vector<std::string> sent_keys_ WEFT_GUARDED_BY(mu_);
  Args last_send_args_ WEFT_GUARDED_BY(mu_);
  Args last_recv_args_ WEFT_GUARDED_BY(mu_);
};

struct EndpointAttrs {
  std::string send_device = kSrc;
  int64_t incarnation = 0x1234;
  std::string recv_device = kDst;
  std::string tensor_name = "edge_3_x";
};

// A _Send (type attr T) or _Recv (tensor_type) node with `attrs`, defaults filled in.
proto::NodeDef EndpointNode(const std::string& op, const std::string& name, DataType dtype,
                            const EndpointAttrs& attrs = EndpointAttrs()) {
  proto::NodeDef node;
  node.set_name(name);
  node.set_op(op);
  auto& a = *node.mutable_attr();
  a[op == "_Send" ? "T" : "tensor_type"] = MakeAttrValue(dtype);
  a["send_device"] = MakeAttrValue(attrs.send_device);
  a["send_device_incarnation"] = MakeAttrValue(attrs.incarnation);
  a["recv_device"] = MakeAttrValue(attrs.recv_device);
  a["tensor_name"] = MakeAttrValue(attrs.tensor_name);
  if (op == "_Send") node.add_input("x");
  return node;
}

class SendRecvTest : public ::testing::Test {
 protected:
  StatusOr<std::unique_ptr<OpKernel>> MakeKernel(proto::NodeDef node) {
    WEFT_ASSIGN_OR_RETURN(const OpDef* op, ops::AllOps().LookUp(node.op()));
    AddDefaultsToNodeDef(*op, &node);
    WEFT_RETURN_IF_ERROR(ValidateNodeDef(node, *op));
    return AllKernels().CreateKernel(node, *op, &device_);
  }

  std::unique_ptr<OpKernel> MustMakeKernel(const proto::NodeDef& node) {
    StatusOr<std::unique_ptr<OpKernel>> kernel = MakeKernel(node);
    EXPECT_TRUE(kernel.ok()) << kernel.status();
    return kernel.ok() ? std::move(kernel).value() : nullptr;
  }

  OpKernelContext::Params Params(OpKernel& kernel, std::vector<Tensor>* inputs,
                                 Rendezvous* rendezvous) {
    OpKernelContext::Params params;
    params.step_id = 1;
    params.kernel = &kernel;
    params.device = &device_;
    params.inputs = inputs;
    params.cancellation_manager = &cancellation_;
    params.rendezvous = rendezvous;
    return params;
  }

  Status RunSend(OpKernel& kernel, const Tensor& value, Rendezvous* rendezvous) {
    std::vector<Tensor> inputs = {value};
    OpKernelContext context(Params(kernel, &inputs, rendezvous));
    return kernel.Compute(&context);
  }

  StatusOr<Tensor> RunRecv(OpKernel& kernel, Rendezvous* rendezvous) {
    std::vector<Tensor> inputs;
    OpKernelContext context(Params(kernel, &inputs, rendezvous));
    WEFT_RETURN_IF_ERROR(kernel.Compute(&context));
    return context.outputs()[0];
  }

  CpuDevice device_{kDst, 1};
  CancellationManager cancellation_;
  FakeRendezvous rendezvous_;
};

TEST_F(SendRecvTest, SendUsesTheKeyItsAttrsNameAndSharesTheBuffer) {
  for (int64_t incarnation : {int64_t{0}, int64_t{0x1234}, int64_t{-1}}) {
    EndpointAttrs attrs;
    attrs.incarnation = incarnation;
    attrs.tensor_name = StrCat("edge_", incarnation);
    std::unique_ptr<OpKernel> send =
        MustMakeKernel(EndpointNode("_Send", "send", DataType::kFloat, attrs));
    ASSERT_NE(send, nullptr);
    Tensor value = Tensor::FromVector<float>({1, 2, 3});
    ASSERT_TRUE(RunSend(*send, value, &rendezvous_).ok());
    std::string expected_key = Rendezvous::CreateKey(kSrc, static_cast<uint64_t>(incarnation), kDst,
                                                     attrs.tensor_name, FrameAndIter{0, 0});
    ASSERT_FALSE(rendezvous_.sent_keys().empty());
    EXPECT_EQ(rendezvous_.sent_keys().back(), expected_key);
    EXPECT_EQ(rendezvous_.last_send_args().device, &device_);
    EXPECT_EQ(rendezvous_.last_send_args().cancellation_manager, &cancellation_);

    std::unique_ptr<OpKernel> recv =
        MustMakeKernel(EndpointNode("_Recv", "recv", DataType::kFloat, attrs));
    ASSERT_NE(recv, nullptr);
    StatusOr<Tensor> received = RunRecv(*recv, &rendezvous_);
    ASSERT_TRUE(received.ok()) << received.status();
    EXPECT_EQ(received->raw_data(), value.raw_data());
    EXPECT_EQ(rendezvous_.last_recv_args().cancellation_manager, &cancellation_);
  }
  EXPECT_EQ(
      Rendezvous::CreateKey(kSrc, static_cast<uint64_t>(int64_t{-1}), kDst, "t", FrameAndIter()),
      std::string(kSrc) + ";ffffffffffffffff;" + kDst + ";t;0:0");
}

TEST_F(SendRecvTest, EveryDtypePassesThroughIncludingResources) {
  ResourceHandle handle;
  handle.device = kSrc;
  handle.name = "var";
  handle.dtype = DataType::kFloat;
  const std::vector<Tensor> values = {
      Tensor::FromVector<float>({1.5f, -2}),
      Tensor::FromVector<double>({3.25}),
      Tensor::FromVector<int32_t>({1, 2, 3}),
      Tensor::FromVector<uint8_t>({255}),
      Tensor::FromVector<int64_t>({int64_t{1} << 40}),
      Tensor::FromVector<bool>({true, false}),
      Tensor::FromVector<float>({}),  // empty
      Tensor::Scalar<float>(7),       // rank 0
      MakeResourceHandleTensor(handle),
  };
  for (size_t i = 0; i < values.size(); ++i) {
    EndpointAttrs attrs;
    attrs.tensor_name = StrCat("edge_", i);
    DataType dtype = values[i].dtype();
    std::unique_ptr<OpKernel> send = MustMakeKernel(EndpointNode("_Send", "send", dtype, attrs));
    std::unique_ptr<OpKernel> recv = MustMakeKernel(EndpointNode("_Recv", "recv", dtype, attrs));
    ASSERT_NE(send, nullptr);
    ASSERT_NE(recv, nullptr);
    ASSERT_TRUE(RunSend(*send, values[i], &rendezvous_).ok());
    StatusOr<Tensor> received = RunRecv(*recv, &rendezvous_);
    ASSERT_TRUE(received.ok()) << received.status();
    EXPECT_EQ(received->dtype(), dtype);
    EXPECT_EQ(received->shape(), values[i].shape());
    EXPECT_TRUE(received->SharesBufferWith(values[i])) << DataTypeName(dtype);
  }
}

TEST_F(SendRecvTest, RecvBeforeSendCompletesWhenTheValueArrives) {
  std::unique_ptr<OpKernel> send = MustMakeKernel(EndpointNode("_Send", "send", DataType::kInt32));
  std::unique_ptr<OpKernel> recv = MustMakeKernel(EndpointNode("_Recv", "recv", DataType::kInt32));
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  ASSERT_NE(recv->AsAsync(), nullptr);
  std::vector<Tensor> inputs;
  OpKernelContext context(Params(*recv, &inputs, &rendezvous_));
  Notification done;
  recv->AsAsync()->ComputeAsync(&context, [&done] { done.Notify(); });
  EXPECT_FALSE(done.HasBeenNotified());
  Tensor value = Tensor::FromVector<int32_t>({4, 5});
  ASSERT_TRUE(RunSend(*send, value, &rendezvous_).ok());
  ASSERT_TRUE(done.HasBeenNotified());
  ASSERT_TRUE(context.status().ok()) << context.status();
  EXPECT_TRUE(context.outputs()[0].SharesBufferWith(value));
  EXPECT_EQ(context.outputs()[0].data<int32_t>()[1], 5);
}

TEST_F(SendRecvTest, MissingRendezvousIsFailedPreconditionNamingTheNode) {
  // KernelRunner gives no rendezvous, as an executor does for a graph without partitions.
  weft::testing::KernelRunner runner;
  std::map<std::string, proto::AttrValue> attrs = {
      {"send_device", MakeAttrValue(kSrc)},
      {"send_device_incarnation", MakeAttrValue(int64_t{1})},
      {"recv_device", MakeAttrValue(kDst)},
      {"tensor_name", MakeAttrValue("edge_1_x")}};
  StatusOr<std::vector<Tensor>> sent =
      runner.RunKernelOnly("_Send", {Tensor::Scalar<float>(1)}, attrs, "lonely_send");
  ASSERT_FALSE(sent.ok());
  EXPECT_TRUE(IsFailedPrecondition(sent.status())) << sent.status();
  EXPECT_THAT(sent.status().message(), HasSubstr("node 'lonely_send' (_Send)"));

  attrs["tensor_type"] = MakeAttrValue(DataType::kFloat);
  StatusOr<std::vector<Tensor>> received = runner.RunKernelOnly("_Recv", {}, attrs, "lonely_recv");
  ASSERT_FALSE(received.ok());
  EXPECT_TRUE(IsFailedPrecondition(received.status())) << received.status();
  EXPECT_THAT(received.status().message(), HasSubstr("node 'lonely_recv' (_Recv)"));
}

TEST_F(SendRecvTest, RecvOfAnotherDtypeIsInvalidArgumentNamingNodeAndKey) {
  std::unique_ptr<OpKernel> send = MustMakeKernel(EndpointNode("_Send", "send", DataType::kFloat));
  std::unique_ptr<OpKernel> recv = MustMakeKernel(EndpointNode("_Recv", "recv", DataType::kInt64));
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  ASSERT_TRUE(RunSend(*send, Tensor::Scalar<float>(1), &rendezvous_).ok());
  StatusOr<Tensor> received = RunRecv(*recv, &rendezvous_);
  ASSERT_FALSE(received.ok());
  EXPECT_TRUE(IsInvalidArgument(received.status())) << received.status();
  EXPECT_THAT(received.status().message(), HasSubstr("node 'recv' (_Recv)"));
  EXPECT_THAT(received.status().message(), HasSubstr(rendezvous_.sent_keys().back()));
  EXPECT_THAT(received.status().message(), HasSubstr("float32"));
  EXPECT_THAT(received.status().message(), HasSubstr("int64"));
}

TEST_F(SendRecvTest, RendezvousErrorsReachTheStepNamingTheNode) {
  std::unique_ptr<OpKernel> send = MustMakeKernel(EndpointNode("_Send", "send", DataType::kFloat));
  std::unique_ptr<OpKernel> recv = MustMakeKernel(EndpointNode("_Recv", "recv", DataType::kFloat));
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  // A waiting Recv is woken by the abort.
  std::vector<Tensor> inputs;
  OpKernelContext context(Params(*recv, &inputs, &rendezvous_));
  Notification done;
  recv->AsAsync()->ComputeAsync(&context, [&done] { done.Notify(); });
  rendezvous_.StartAbort(Aborted("step aborted: boom"));
  ASSERT_TRUE(done.HasBeenNotified());
  EXPECT_TRUE(IsAborted(context.status())) << context.status();
  EXPECT_THAT(context.status().message(), HasSubstr("node 'recv' (_Recv)"));
  EXPECT_THAT(context.status().message(), HasSubstr("boom"));
  EXPECT_FALSE(context.outputs()[0].IsInitialized());

  Status sent = RunSend(*send, Tensor::Scalar<float>(1), &rendezvous_);
  EXPECT_TRUE(IsAborted(sent)) << sent;
  EXPECT_THAT(sent.message(), HasSubstr("node 'send' (_Send)"));
}

TEST_F(SendRecvTest, DeadTensorIsUnimplemented) {
  std::unique_ptr<OpKernel> recv = MustMakeKernel(EndpointNode("_Recv", "recv", DataType::kFloat));
  ASSERT_NE(recv, nullptr);
  StatusOr<Rendezvous::ParsedKey> key =
      Rendezvous::ParseKey(Rendezvous::CreateKey(kSrc, 0x1234, kDst, "edge_3_x", FrameAndIter()));
  ASSERT_TRUE(key.ok()) << key.status();
  ASSERT_TRUE(rendezvous_.Send(*key, Rendezvous::Args(), Tensor(), /*is_dead=*/true).ok());
  StatusOr<Tensor> received = RunRecv(*recv, &rendezvous_);
  ASSERT_FALSE(received.ok());
  EXPECT_TRUE(IsUnimplemented(received.status())) << received.status();
  EXPECT_THAT(received.status().message(), HasSubstr("node 'recv' (_Recv)"));
}

TEST_F(SendRecvTest, BadDeviceAttrFailsConstructionNamingTheNode) {
  EndpointAttrs attrs;
  attrs.send_device = "cpu0";
  for (const char* op : {"_Send", "_Recv"}) {
    StatusOr<std::unique_ptr<OpKernel>> kernel =
        MakeKernel(EndpointNode(op, "bad", DataType::kFloat, attrs));
    ASSERT_FALSE(kernel.ok()) << op;
    EXPECT_TRUE(IsInvalidArgument(kernel.status())) << kernel.status();
    EXPECT_THAT(kernel.status().message(), HasSubstr(StrCat("node 'bad' (", op, ")")));
    EXPECT_THAT(kernel.status().message(), HasSubstr("source device 'cpu0'"));
  }
  attrs = EndpointAttrs();
  attrs.tensor_name = "";
  StatusOr<std::unique_ptr<OpKernel>> kernel =
      MakeKernel(EndpointNode("_Recv", "unnamed", DataType::kFloat, attrs));
  ASSERT_FALSE(kernel.ok());
  EXPECT_THAT(kernel.status().message(), HasSubstr("tensor name is empty"));
}

TEST_F(SendRecvTest, KernelsServeEveryDtypeSendIsCheapRecvIsAsync) {
  for (DataType dtype : {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kUInt8,
                         DataType::kInt64, DataType::kBool, DataType::kResource}) {
    EXPECT_TRUE(AllKernels().HasKernel(EndpointNode("_Send", "s", dtype), "CPU"));
    EXPECT_TRUE(AllKernels().HasKernel(EndpointNode("_Recv", "r", dtype), "CPU"));
  }
  std::unique_ptr<OpKernel> send = MustMakeKernel(EndpointNode("_Send", "send", DataType::kFloat));
  std::unique_ptr<OpKernel> recv = MustMakeKernel(EndpointNode("_Recv", "recv", DataType::kFloat));
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  EXPECT_TRUE(send->IsCheap());
  EXPECT_EQ(send->AsAsync(), nullptr);
  EXPECT_NE(recv->AsAsync(), nullptr);
}

}  // namespace
}  // namespace weft::kernels
