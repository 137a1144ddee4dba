// Tests for the Placer: requested and default devices, colocation through resource inputs and
// _class attrs, soft placement, kernel availability, and the error messages.
#include "weft/graph/placer.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"

namespace weft {
namespace {

std::string Cpu(int id) { return FullName("localhost", 0, 0, "CPU", id); }
std::string Gpu(int id) { return FullName("localhost", 0, 0, "GPU", id); }

std::vector<DeviceDescription> FourCpus() {
  std::vector<DeviceDescription> devices;
  for (int i = 0; i < 4; ++i) devices.push_back({Cpu(i), "CPU"});
  return devices;
}

// Two CPUs and two GPUs, CPUs first.
std::vector<DeviceDescription> CpusAndGpus() {
  return {{Cpu(0), "CPU"}, {Cpu(1), "CPU"}, {Gpu(0), "GPU"}, {Gpu(1), "GPU"}};
}

class NothingKernel final : public OpKernel {
 public:
  explicit NothingKernel(OpKernelConstruction* context) : OpKernel(context) {}
  Status Compute(OpKernelContext*) override { return Status::OK(); }
};

bool Contains(const Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

class PlacerTest : public ::testing::Test {
 protected:
  PlacerTest() : root_(Scope::NewRootScope()) {}

  Graph* graph() { return root_.graph(); }
  std::string DeviceOf(std::string_view name) {
    Node* node = graph()->FindNode(name);
    EXPECT_NE(node, nullptr) << name;
    return node ? node->assigned_device_name() : "";
  }
  void Request(std::string_view name, std::string device) {
    Node* node = graph()->FindNode(name);
    ASSERT_NE(node, nullptr) << name;
    node->set_requested_device(std::move(device));
  }
  Status Place(std::vector<DeviceDescription> devices, int default_device = 0,
               PlacerOptions options = {}, const KernelRegistry* kernels = nullptr) {
    EXPECT_TRUE(root_.ok()) << root_.status();
    return Placer(graph(), std::move(devices), default_device, kernels, options).Run();
  }
  // A variable with a read, an assign and a gradient-descent update.
  void BuildVariable() {
    auto var = ops::VarHandleOp(root_.WithOpName("var"), DataType::kFloat, PartialShape({2}));
    ops::ReadVariableOp(root_.WithOpName("read"), var);
    ops::AssignVariableOp(root_.WithOpName("assign"), var, {1.0f, 2.0f});
    ops::ResourceApplyGradientDescent(root_.WithOpName("apply"), var, 0.5f, {1.0f, 1.0f});
  }
  bool AllOnOneDevice(const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      if (DeviceOf(name) != DeviceOf(names.front())) return false;
    }
    return true;
  }
  // A Const colocated by `_class` with every node in `targets`.
  void ConstWithClass(std::string_view name, const std::vector<std::string>& targets) {
    proto::AttrValue classes;
    for (const std::string& target : targets) classes.mutable_list()->add_s("loc:@" + target);
    NodeBuilder(root_.WithOpName(name), "Const")
        .Attr("value", Tensor::Scalar(1.0f))
        .Attr("dtype", DataType::kFloat)
        .Attr("_class", classes)
        .Finalize();
  }

  Scope root_;
};

TEST_F(PlacerTest, NodesWithoutARequestGoToTheDefaultDevice) {
  auto x = ops::Const(root_.WithOpName("x"), {1.0f, 2.0f});
  ops::Neg(root_.WithOpName("y"), x);
  ASSERT_TRUE(Place(FourCpus(), /*default_device=*/2).ok());
  EXPECT_EQ(DeviceOf("x"), Cpu(2));
  EXPECT_EQ(DeviceOf("y"), Cpu(2));
  for (Node* node : graph()->nodes()) EXPECT_FALSE(node->assigned_device_name().empty());
}

TEST_F(PlacerTest, PartialSpecsPickTheFirstMatchingDevice) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/device:CPU:1", Cpu(1)},
      {"/cpu:1", Cpu(1)},
      {"/CPU:3", Cpu(3)},
      {"/device:cpu:2", Cpu(2)},
      {"/job:localhost/replica:0/task:0/device:CPU:2", Cpu(2)},
      {"/job:localhost/replica:0/task:0/cpu:3", Cpu(3)},
      {"/job:localhost", Cpu(0)},
      {"/task:0", Cpu(0)},
      {"/device:CPU:*", Cpu(0)},
      {"/", Cpu(3)},  // no constraint at all: the default device
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    ops::Const(root_.WithOpName(StrCat("n", i)).WithDevice(cases[i].first), 1.0f);
  }
  ASSERT_TRUE(Place(FourCpus(), /*default_device=*/3).ok());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(DeviceOf(StrCat("n", i)), cases[i].second) << cases[i].first;
  }
}

TEST_F(PlacerTest, WildcardIdPicksTheFirstDeviceOfThatType) {
  ops::Const(root_.WithOpName("g").WithDevice("/device:GPU:*"), 1.0f);
  ops::Const(root_.WithOpName("g1").WithDevice("/gpu:1"), 1.0f);
  ops::Const(root_.WithOpName("c").WithDevice("/device:CPU:*"), 1.0f);
  ASSERT_TRUE(Place(CpusAndGpus(), /*default_device=*/1).ok());
  EXPECT_EQ(DeviceOf("g"), Gpu(0));
  EXPECT_EQ(DeviceOf("g1"), Gpu(1));
  EXPECT_EQ(DeviceOf("c"), Cpu(0));
}

TEST_F(PlacerTest, VariableAndItsUsersFollowARequestOnAnyMember) {
  BuildVariable();
  ops::Const(root_.WithOpName("other"), 3.0f);
  Request("read", "/device:CPU:3");  // only the read asks
  ASSERT_TRUE(Place(FourCpus(), /*default_device=*/1).ok());
  EXPECT_EQ(DeviceOf("var"), Cpu(3));
  EXPECT_TRUE(AllOnOneDevice({"var", "read", "assign", "apply"}));
  EXPECT_EQ(DeviceOf("other"), Cpu(1));
}

TEST_F(PlacerTest, ResourceColocationFollowsIdentityChains) {
  auto var = ops::VarHandleOp(root_.WithOpName("var"), DataType::kFloat, PartialShape({}));
  auto alias = ops::Identity(root_.WithOpName("alias"), var);
  ops::ReadVariableOp(root_.WithOpName("read").WithDevice("/device:CPU:2"), alias,
                      DataType::kFloat);
  ASSERT_TRUE(Place(FourCpus()).ok());
  EXPECT_EQ(DeviceOf("var"), Cpu(2));
  EXPECT_EQ(DeviceOf("alias"), Cpu(2));
}

TEST_F(PlacerTest, ClassAttrColocatesWithTheNamedNode) {
  ops::Const(root_.WithOpName("anchor").WithDevice("/device:CPU:1"), 1.0f);
  ConstWithClass("follower", {"anchor"});
  // Two nodes naming a node that is not in the graph stay together.
  ConstWithClass("ghost_a", {"ghost"});
  ConstWithClass("ghost_b", {"ghost"});
  Request("ghost_b", "/device:CPU:2");
  ASSERT_TRUE(Place(FourCpus(), /*default_device=*/3).ok());
  EXPECT_EQ(DeviceOf("follower"), Cpu(1));
  EXPECT_EQ(DeviceOf("ghost_a"), Cpu(2));
  EXPECT_EQ(DeviceOf("ghost_b"), Cpu(2));
}

TEST_F(PlacerTest, ClassAttrJoinsTwoVariablesIntoOneGroup) {
  BuildVariable();
  auto var2 = ops::VarHandleOp(root_.WithOpName("var2"), DataType::kFloat, PartialShape({}));
  ops::ReadVariableOp(root_.WithOpName("read2"), var2);
  ConstWithClass("bridge", {"read", "read2"});
  Request("bridge", "/device:CPU:2");
  ASSERT_TRUE(Place(FourCpus()).ok());
  EXPECT_TRUE(AllOnOneDevice({"var", "read", "assign", "apply", "var2", "read2", "bridge"}));
  EXPECT_EQ(DeviceOf("var2"), Cpu(2));
}

TEST_F(PlacerTest, ConflictingRequestsNameBothNodesAndBothRequests) {
  BuildVariable();
  Request("var", "/device:CPU:0");
  Request("assign", "/device:CPU:1");
  Status s = Place(FourCpus());
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "node 'var' (VarHandleOp)")) << s;
  EXPECT_TRUE(Contains(s, "node 'assign' (AssignVariableOp)")) << s;
  EXPECT_TRUE(Contains(s, "'/device:CPU:0'")) << s;
  EXPECT_TRUE(Contains(s, "'/device:CPU:1'")) << s;
  // Nothing was placed.
  for (Node* node : graph()->nodes()) EXPECT_TRUE(node->assigned_device_name().empty());
}

TEST_F(PlacerTest, SoftPlacementResolvesConflictingRequests) {
  BuildVariable();
  Request("var", "/device:CPU:1");
  Request("assign", "/device:GPU:0");
  PlacerOptions options;
  options.allow_soft_placement = true;
  ASSERT_TRUE(Place(CpusAndGpus(), /*default_device=*/1, options).ok());
  EXPECT_TRUE(AllOnOneDevice({"var", "read", "assign", "apply"}));
  EXPECT_EQ(DeviceOf("var"), Cpu(1));
}

TEST_F(PlacerTest, JobConflictsStayErrorsUnderSoftPlacement) {
  BuildVariable();
  Request("var", "/job:localhost");
  Request("read", "/job:worker");
  PlacerOptions options;
  options.allow_soft_placement = true;
  Status s = Place(FourCpus(), 0, options);
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "'var'") && Contains(s, "'read'")) << s;
  EXPECT_TRUE(Contains(s, "different jobs")) << s;
}

TEST_F(PlacerTest, MissingDeviceErrorListsTheAvailableDevices) {
  ops::Const(root_.WithOpName("ok"), 1.0f);
  ops::Const(root_.WithOpName("far").WithDevice("/device:CPU:7"), 1.0f);
  Status s = Place(FourCpus());
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "node 'far' (Const)")) << s;
  EXPECT_TRUE(Contains(s, "'/device:CPU:7'")) << s;
  EXPECT_TRUE(
      Contains(s, "Available devices: " + Cpu(0) + ", " + Cpu(1) + ", " + Cpu(2) + ", " + Cpu(3)))
      << s;
  EXPECT_TRUE(graph()->FindNode("ok")->assigned_device_name().empty());
}

TEST_F(PlacerTest, MissingDeviceInAGroupNamesTheRequester) {
  BuildVariable();
  Request("apply", "/job:worker/device:CPU:0");
  Status s = Place(FourCpus());
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "node 'apply' (ResourceApplyGradientDescent)")) << s;
  EXPECT_TRUE(Contains(s, "'/job:worker/device:CPU:0'")) << s;
  EXPECT_TRUE(Contains(s, "colocation group")) << s;
  EXPECT_TRUE(Contains(s, "'var'")) << s;
}

TEST_F(PlacerTest, SoftPlacementSendsMissingDevicesToTheDefault) {
  BuildVariable();
  Request("read", "/device:GPU:0");
  ops::Const(root_.WithOpName("far").WithDevice("/device:CPU:7"), 1.0f);
  PlacerOptions options;
  options.allow_soft_placement = true;
  ASSERT_TRUE(Place(FourCpus(), /*default_device=*/2, options).ok());
  EXPECT_EQ(DeviceOf("far"), Cpu(2));
  EXPECT_EQ(DeviceOf("read"), Cpu(2));
  EXPECT_TRUE(AllOnOneDevice({"var", "read", "assign", "apply"}));
}

TEST_F(PlacerTest, SoftPlacementKeepsTheRequestedTask) {
  std::vector<DeviceDescription> devices = {{FullName("w", 0, 0, "CPU", 0), "CPU"},
                                            {FullName("w", 0, 1, "CPU", 0), "CPU"},
                                            {FullName("w", 0, 1, "CPU", 1), "CPU"}};
  ops::Const(root_.WithOpName("t1").WithDevice("/job:w/task:1/device:CPU:5"), 1.0f);
  PlacerOptions options;
  options.allow_soft_placement = true;
  ASSERT_TRUE(Place(devices, /*default_device=*/0, options).ok());
  EXPECT_EQ(DeviceOf("t1"), FullName("w", 0, 1, "CPU", 0));
}

TEST_F(PlacerTest, TaskSpecsPickThatTasksDevices) {
  std::vector<DeviceDescription> devices;
  for (int task = 0; task < 3; ++task) {
    for (int id = 0; id < 2; ++id) devices.push_back({FullName("worker", 0, task, "CPU", id), ""});
  }
  ops::Const(root_.WithOpName("a").WithDevice("/job:worker/task:2"), 1.0f);
  ops::Const(root_.WithOpName("b").WithDevice("/task:1/cpu:1"), 1.0f);
  ASSERT_TRUE(Place(devices).ok());
  EXPECT_EQ(DeviceOf("a"), FullName("worker", 0, 2, "CPU", 0));
  EXPECT_EQ(DeviceOf("b"), FullName("worker", 0, 1, "CPU", 1));
}

TEST_F(PlacerTest, KernelAvailabilityDecidesTheDevice) {
  KernelRegistry kernels;
  for (const char* op : {"Const", "VarHandleOp", "ReadVariableOp", "AssignVariableOp",
                         "ResourceApplyGradientDescent", "Neg"}) {
    kernels.Register<NothingKernel>(KernelDef(op, "CPU"));
  }
  for (const char* op : {"Const", "VarHandleOp", "ReadVariableOp"}) {
    kernels.Register<NothingKernel>(KernelDef(op, "GPU"));
  }
  // Neg has no GPU kernel: with the GPU as default it goes to the first CPU.
  auto x = ops::Const(root_.WithOpName("x"), 1.0f);
  ops::Neg(root_.WithOpName("neg"), x);
  // A partial spec skips matching devices without the kernels.
  ops::Neg(root_.WithOpName("neg_anywhere").WithDevice("/job:localhost"), x);
  ASSERT_TRUE(Place(CpusAndGpus(), /*default_device=*/2, {}, &kernels).ok());
  EXPECT_EQ(DeviceOf("x"), Gpu(0));
  EXPECT_EQ(DeviceOf("neg"), Cpu(0));
  EXPECT_EQ(DeviceOf("neg_anywhere"), Cpu(0));
}

TEST_F(PlacerTest, MissingKernelOnTheRequestedTypeNamesTheNodeAndOp) {
  KernelRegistry kernels;
  for (const char* op : {"Const", "VarHandleOp", "ReadVariableOp", "AssignVariableOp",
                         "ResourceApplyGradientDescent"}) {
    kernels.Register<NothingKernel>(KernelDef(op, "CPU"));
  }
  for (const char* op : {"Const", "VarHandleOp", "ReadVariableOp"}) {
    kernels.Register<NothingKernel>(KernelDef(op, "GPU"));
  }
  BuildVariable();
  Request("var", "/device:GPU:1");
  Status s = Place(CpusAndGpus(), 0, {}, &kernels);
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "node 'assign' (AssignVariableOp)")) << s;
  EXPECT_TRUE(Contains(s, "no kernel for op 'AssignVariableOp' on device type GPU")) << s;
  EXPECT_TRUE(Contains(s, "'/device:GPU:1'")) << s;

  // Soft placement falls back to a device with kernels for the whole group.
  PlacerOptions options;
  options.allow_soft_placement = true;
  ASSERT_TRUE(Place(CpusAndGpus(), 1, options, &kernels).ok());
  EXPECT_EQ(DeviceOf("var"), Cpu(1));
  EXPECT_TRUE(AllOnOneDevice({"var", "read", "assign", "apply"}));
}

TEST_F(PlacerTest, AnOpWithoutAnyKernelIsAnError) {
  KernelRegistry kernels;
  kernels.Register<NothingKernel>(KernelDef("Const", "CPU"));
  auto x = ops::Const(root_.WithOpName("x"), 1.0f);
  ops::Neg(root_.WithOpName("neg"), x);
  Status s = Place(FourCpus(), 0, {}, &kernels);
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "node 'neg' (Neg): no kernel for op 'Neg' on device type CPU")) << s;
}

TEST_F(PlacerTest, AlreadyAssignedNodesKeepTheirDeviceAndPullTheirGroup) {
  BuildVariable();
  graph()->FindNode("var")->set_assigned_device_name(Cpu(2));
  ASSERT_TRUE(Place(FourCpus()).ok());
  EXPECT_EQ(DeviceOf("read"), Cpu(2));
  EXPECT_TRUE(AllOnOneDevice({"var", "read", "assign", "apply"}));
  // Placing again changes nothing.
  ASSERT_TRUE(Place(FourCpus(), 3).ok());
  EXPECT_EQ(DeviceOf("apply"), Cpu(2));
}

TEST_F(PlacerTest, AnAssignmentAgainstTheRequestIsAnError) {
  BuildVariable();
  graph()->FindNode("var")->set_assigned_device_name(Cpu(2));
  Request("read", "/device:CPU:1");
  Status s = Place(FourCpus());
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "node 'var' (VarHandleOp)") && Contains(s, "'/device:CPU:1'")) << s;
}

TEST_F(PlacerTest, MalformedRequestNamesTheNode) {
  ops::Const(root_.WithOpName("bad").WithDevice("/device:CPU:zero"), 1.0f);
  Status s = Place(FourCpus());
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "node 'bad' (Const)")) << s;
  EXPECT_TRUE(Contains(s, "device id 'zero'")) << s;
}

TEST_F(PlacerTest, BadDeviceListsAreErrors) {
  ops::Const(root_.WithOpName("x"), 1.0f);
  Status s = Place({});
  EXPECT_TRUE(IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(Contains(s, "No devices are registered")) << s;
  s = Place({{"/device:CPU:0", "CPU"}});
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "'/device:CPU:0' is not a full name")) << s;
  s = Place({{"cpu0", "CPU"}});
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  s = Place(FourCpus(), 4);
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(Contains(s, "out of range")) << s;
}

TEST_F(PlacerTest, LogDevicePlacementStillPlaces) {
  ops::Const(root_.WithOpName("x"), 1.0f);
  PlacerOptions options;
  options.log_device_placement = true;
  ASSERT_TRUE(Place(FourCpus(), 1, options).ok());
  EXPECT_EQ(DeviceOf("x"), Cpu(1));
}

}  // namespace
}  // namespace weft
