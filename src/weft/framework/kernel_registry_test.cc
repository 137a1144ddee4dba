#include "weft/framework/kernel_registry.h"

#include <gtest/gtest.h>

#include "weft/framework/device_base.h"

namespace weft {
namespace {

class FillWithSeven final : public OpKernel {
 public:
  explicit FillWithSeven(OpKernelConstruction* context) : OpKernel(context) {}
  Status Compute(OpKernelContext* context) override {
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape({2}), &out));
    for (float& v : out->flat<float>()) v = 7;
    return Status::OK();
  }
};

class RefusesToBuild final : public OpKernel {
 public:
  explicit RefusesToBuild(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(InvalidArgument("bad padding"));
  }
  Status Compute(OpKernelContext*) override { return Status::OK(); }
};

class KernelRegistryTest : public ::testing::Test {
 protected:
  KernelRegistryTest() : device_("/device:CPU:0", "CPU") {
    op_ = OpDefBuilder("Seven").Output("y: T").Attr("T: type").Build().value();
    registry_.Register<FillWithSeven>(KernelDef("Seven", "CPU").TypeConstraint<float>("T"));
    registry_.Register<RefusesToBuild>(KernelDef("Seven", "CPU").TypeConstraint<int32_t>("T"));
  }
  proto::NodeDef Node(DataType type) {
    proto::NodeDef node;
    node.set_name("seven");
    node.set_op("Seven");
    (*node.mutable_attr())["T"] = MakeAttrValue(type);
    return node;
  }

  DeviceBase device_;
  OpDef op_;
  KernelRegistry registry_;
};

TEST_F(KernelRegistryTest, PicksTheKernelMatchingTheTypeConstraint) {
  proto::NodeDef node = Node(DataType::kFloat);
  auto kernel = registry_.CreateKernel(node, op_, &device_);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  std::vector<Tensor> inputs;
  OpKernelContext::Params params;
  params.kernel = kernel->get();
  params.device = &device_;
  params.inputs = &inputs;
  OpKernelContext context(params);
  ASSERT_TRUE((*kernel)->Compute(&context).ok());
  EXPECT_EQ(context.outputs()[0].flat<float>()[1], 7);
  EXPECT_TRUE(registry_.HasKernel(node, "CPU"));
  EXPECT_FALSE(registry_.HasKernel(node, "GPU"));
}

TEST_F(KernelRegistryTest, NoMatchingKernelNamesNodeDeviceAndTypes) {
  Status s = registry_.CreateKernel(Node(DataType::kDouble), op_, &device_).status();
  EXPECT_TRUE(IsNotFound(s));
  EXPECT_NE(s.message().find("node 'seven' (Seven)"), std::string::npos) << s;
  EXPECT_NE(s.message().find("T=float64"), std::string::npos) << s;
  EXPECT_NE(s.message().find("with T in {float32}"), std::string::npos) << s;
}

TEST_F(KernelRegistryTest, ConstructionErrorsAreReturned) {
  Status s = registry_.CreateKernel(Node(DataType::kInt32), op_, &device_).status();
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("bad padding"), std::string::npos) << s;
}

}  // namespace
}  // namespace weft
