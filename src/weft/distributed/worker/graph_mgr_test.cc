// GraphMgr on one worker task with one device: registration checks, running a registered graph
// with feeds and fetches in registration order, and deregistration.
#include "weft/distributed/worker/graph_mgr.h"

#include <chrono>
#include <memory>

#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/core/thread_pool.h"
#include "weft/distributed/worker/rendezvous_mgr.h"
#include "weft/framework/tensor_proto_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/collective/local_collective_executor.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

constexpr char kTask[] = "/job:worker/replica:0/task:0";
constexpr char kCpu[] = "/job:worker/replica:0/task:0/device:CPU:0";

// An _Arg-fed graph written by hand, as a master would send it: out = a * b.
proto::DevicePartition MulPartition() {
  Scope root = Scope::NewRootScope().WithDevice(kCpu);
  auto a = ops::Placeholder(root.WithOpName("a"), DataType::kFloat);
  auto b = ops::Placeholder(root.WithOpName("b"), DataType::kFloat);
  ops::Mul(root.WithOpName("out"), a, b);
  proto::GraphDef graph = root.ToGraphDef().value();
  // Rewrite the placeholders into _Arg nodes (a -> index 1, b -> index 0) and add a _Retval.
  for (proto::NodeDef& node : *graph.mutable_node()) {
    if (node.op() != "Placeholder") continue;
    const int64_t index = node.name() == "a" ? 1 : 0;
    proto::AttrValue type = node.attr().at("dtype");
    proto::AttrValue shape = node.attr().at("shape");
    node.set_op("_Arg");
    node.clear_attr();
    (*node.mutable_attr())["T"] = type;
    (*node.mutable_attr())["shape"] = shape;
    (*node.mutable_attr())["index"].set_i(index);
  }
  proto::NodeDef* retval = graph.add_node();
  retval->set_name("retval");
  retval->set_op("_Retval");
  retval->set_device(kCpu);
  retval->add_input("out");
  (*retval->mutable_attr())["T"].set_type(ToProto(DataType::kFloat));
  (*retval->mutable_attr())["index"].set_i(0);
  proto::DevicePartition partition;
  partition.set_device(kCpu);
  *partition.mutable_graph_def() = graph;
  return partition;
}

class GraphMgrTest : public ::testing::Test {
 protected:
  GraphMgrTest()
      : devices_(CreateLocalDevices({}, 1, "worker", 0).value()),
        pool_("compute", 2),
        graph_mgr_(kTask, devices_, &ops::AllOps(), &kernels::AllKernels()) {}

  proto::RegisterGraphRequest MulRequest() {
    proto::RegisterGraphRequest request;
    request.set_session_handle("s");
    *request.add_partition() = MulPartition();
    request.add_feed("b:0");
    request.add_feed("a:0");
    request.add_fetch("out:0");
    return request;
  }

  Status Run(const std::string& handle, proto::RunGraphRequest request,
             proto::RunGraphResponse* response) {
    request.set_graph_handle(handle);
    auto rendezvous = std::make_shared<RemoteRendezvous>(request.step_id());
    WEFT_RETURN_IF_ERROR(rendezvous->Initialize(nullptr, kTask));
    CancellationManager cancellation;
    LocalCollectiveExecutor collectives;
    GraphMgr::StepArgs args;
    args.step_id = request.step_id();
    args.rendezvous = rendezvous.get();
    args.collective_executor = &collectives;
    args.cancellation_manager = &cancellation;
    args.runner = [this](std::function<void()> fn) { pool_.Schedule(std::move(fn)); };
    Notification done;
    Status status;
    graph_mgr_.ExecuteAsync(args, request, response, [&](const Status& s) {
      status = s;
      done.Notify();
    });
    if (!done.WaitForNotificationWithTimeout(std::chrono::seconds(20))) {
      return DeadlineExceeded("the step did not end");
    }
    return status;
  }

  std::shared_ptr<const DeviceMgr> devices_;
  ThreadPool pool_;
  GraphMgr graph_mgr_;
};

proto::NamedTensorProto Named(const std::string& name, const Tensor& value) {
  proto::NamedTensorProto named;
  named.set_name(name);
  *named.mutable_tensor() = ToProto(value);
  return named;
}

TEST_F(GraphMgrTest, RunsARegisteredGraph) {
  auto handle = graph_mgr_.Register(MulRequest());
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(handle->size(), 16u);
  proto::RunGraphRequest request;
  request.set_step_id(1);
  // Sends may come in any order; the registration order decides the _Arg index.
  *request.add_send() = Named("a:0", Tensor::FromVector<float>({2, 3}));
  *request.add_send() = Named("b:0", Tensor::FromVector<float>({10, 100}));
  proto::RunGraphResponse response;
  Status s = Run(*handle, request, &response);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(response.recv_size(), 1);
  EXPECT_EQ(response.recv(0).name(), "out:0");
  EXPECT_TENSOR_EQ(TensorFromProto(response.recv(0).tensor()).value(),
                   Tensor::FromVector<float>({20, 300}));
}

TEST_F(GraphMgrTest, HandlesAreDistinctAndDeregisterForgets) {
  auto first = graph_mgr_.Register(MulRequest());
  auto second = graph_mgr_.Register(MulRequest());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(*first, *second);
  EXPECT_TRUE(graph_mgr_.Deregister(*first).ok());
  Status again = graph_mgr_.Deregister(*first);
  EXPECT_TRUE(IsAborted(again)) << again;
  EXPECT_NE(again.message().find(*first), std::string::npos);
  proto::RunGraphResponse response;
  Status run = Run(*first, {}, &response);
  EXPECT_TRUE(IsAborted(run)) << run;
}

TEST_F(GraphMgrTest, RegistrationErrors) {
  proto::RegisterGraphRequest empty;
  EXPECT_TRUE(IsInvalidArgument(graph_mgr_.Register(empty).status()));

  proto::RegisterGraphRequest twice = MulRequest();
  *twice.add_partition() = MulPartition();
  auto s = graph_mgr_.Register(twice);
  EXPECT_TRUE(IsInvalidArgument(s.status())) << s.status();

  proto::RegisterGraphRequest one_feed = MulRequest();
  one_feed.mutable_feed()->RemoveLast();  // _Arg index 1 is out of range
  s = graph_mgr_.Register(one_feed);
  EXPECT_TRUE(IsInvalidArgument(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("'a'"), std::string::npos) << s.status();

  proto::RegisterGraphRequest elsewhere = MulRequest();
  elsewhere.mutable_partition(0)->set_device("/job:worker/replica:0/task:0/device:CPU:7");
  s = graph_mgr_.Register(elsewhere);
  EXPECT_TRUE(IsInvalidArgument(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("CPU:7"), std::string::npos) << s.status();

  proto::RegisterGraphRequest misplaced = MulRequest();
  misplaced.mutable_partition(0)->mutable_graph_def()->mutable_node(0)->set_device(
      "/job:worker/replica:0/task:3/device:CPU:0");
  s = graph_mgr_.Register(misplaced);
  EXPECT_TRUE(IsInvalidArgument(s.status())) << s.status();

  proto::RegisterGraphRequest duplicate_feed = MulRequest();
  duplicate_feed.set_feed(1, "b:0");
  s = graph_mgr_.Register(duplicate_feed);
  EXPECT_TRUE(IsInvalidArgument(s.status())) << s.status();
}

}  // namespace
}  // namespace weft
