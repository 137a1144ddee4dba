// Tests of the memory seam as kernels see it: HostMemory args and MemoryTypesForNode, kernels
// allocating outputs in the right memory, CPU kernels registered for another device type, and
// CopyTensorAsync copying only across memory spaces, through the right DeviceContext.
#include "weft/framework/copy_tensor.h"

#include <cstring>

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/framework/device_base.h"
#include "weft/framework/kernel_registry.h"
#include "weft/framework/node_def_util.h"

namespace weft {
namespace {

// Memory of its own, backed by host bytes.
class OwnMemory final : public Allocator {
 public:
  std::string Name() const override { return "own"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    return HostAllocator()->AllocateRaw(alignment, bytes);
  }
  void DeallocateRaw(void* pointer, size_t bytes) override {
    HostAllocator()->DeallocateRaw(pointer, bytes);
  }
  AllocatorStats GetStats() const override { return {}; }
  MemoryType memory_type() const override { return MemoryType::kDevice; }
};

// Records which copy ran; copies the bytes inline.
class RecordingContext final : public DeviceContext {
 public:
  void CopyCPUTensorToDeviceAsync(const Tensor* cpu_tensor, DeviceBase*, Tensor* device_tensor,
                                  StatusCallback done) override {
    Copy(cpu_tensor, device_tensor, "h2d", std::move(done));
  }
  void CopyDeviceTensorToCPUAsync(const Tensor* device_tensor, DeviceBase*, Tensor* cpu_tensor,
                                  StatusCallback done) override {
    Copy(device_tensor, cpu_tensor, "d2h", std::move(done));
  }
  void CopyDeviceTensorToDeviceAsync(const Tensor* src, DeviceBase*, Tensor* dst,
                                     StatusCallback done) override {
    Copy(src, dst, "d2d", std::move(done));
  }
  std::string log;

 private:
  void Copy(const Tensor* src, Tensor* dst, const char* what, StatusCallback done) {
    std::memcpy(dst->raw_data(), src->raw_data(), src->TotalBytes());
    log += log.empty() ? what : StrCat(" ", what);
    done(Status::OK());
  }
};

class OwnMemoryDevice final : public DeviceBase {
 public:
  explicit OwnMemoryDevice(std::string name) : DeviceBase(std::move(name), "OWN") {
    set_memory(&memory_, &context_);
  }
  RecordingContext& context() { return context_; }

 private:
  OwnMemory memory_;
  RecordingContext context_;
};

OpDef ShapedOp() {
  return OpDefBuilder("Shaped")
      .Input("x: T")
      .Input("shape: int32")
      .Input("handle: resource")
      .Output("y: T")
      .Output("size: int32")
      .HostMemory("shape")
      .HostMemory("size")
      .Attr("T: type")
      .Build()
      .value();
}

proto::NodeDef ShapedNode() {
  proto::NodeDef node;
  node.set_name("shaped");
  node.set_op("Shaped");
  (*node.mutable_attr())["T"] = MakeAttrValue(DataType::kFloat);
  return node;
}

TEST(MemoryTypesTest, HostMemoryArgsAndResourceHandlesStayOnTheHost) {
  std::vector<MemoryType> in, out;
  ASSERT_TRUE(MemoryTypesForNode(ShapedNode(), ShapedOp(), &in, &out).ok());
  EXPECT_EQ(in,
            (std::vector<MemoryType>{MemoryType::kDevice, MemoryType::kHost, MemoryType::kHost}));
  EXPECT_EQ(out, (std::vector<MemoryType>{MemoryType::kDevice, MemoryType::kHost}));
  Status unknown = OpDefBuilder("Bad").Input("x: float32").HostMemory("y").Build().status();
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.message().find("'y'"), std::string::npos) << unknown;
}

class Outputs final : public OpKernel {
 public:
  explicit Outputs(OpKernelConstruction* context) : OpKernel(context) {}
  Status Compute(OpKernelContext* context) override {
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape({2}), &out));
    return context->AllocateOutput(1, TensorShape({}), &out);
  }
};

TEST(MemoryTypesTest, KernelsAllocateOutputsInTheMemoryTheirArgsSay) {
  KernelRegistry registry;
  registry.Register<Outputs>(KernelDef("Shaped", "CPU").TypeConstraint<float>("T"));
  registry.CopyDeviceKernels("CPU", "OWN");
  OwnMemoryDevice own("/device:OWN:0");
  DeviceBase cpu("/device:CPU:0", "CPU");
  const OpDef op = ShapedOp();
  for (DeviceBase* device : {static_cast<DeviceBase*>(&own), &cpu}) {
    auto kernel = registry.CreateKernel(ShapedNode(), op, device);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    std::vector<Tensor> inputs;
    OpKernelContext::Params params;
    params.kernel = kernel->get();
    params.device = device;
    params.inputs = &inputs;
    OpKernelContext context(params);
    ASSERT_TRUE((*kernel)->Compute(&context).ok());
    EXPECT_EQ(context.outputs()[0].allocator(), device->GetAllocator()) << device->name();
    EXPECT_EQ(context.outputs()[1].allocator(), HostAllocator()) << device->name();
    auto temp = context.AllocateTemp(DataType::kFloat, TensorShape({3}));
    ASSERT_TRUE(temp.ok());
    EXPECT_EQ(temp->allocator(), device->GetAllocator());
  }
  // The copied registration keeps the type constraint.
  proto::NodeDef ints = ShapedNode();
  (*ints.mutable_attr())["T"] = MakeAttrValue(DataType::kInt32);
  EXPECT_TRUE(registry.HasKernel(ShapedNode(), "OWN"));
  EXPECT_FALSE(registry.HasKernel(ints, "OWN"));
}

TEST(CopyTensorTest, CopiesOnlyAcrossMemorySpacesThroughTheOwnersContext) {
  OwnMemoryDevice a("/device:OWN:0"), b("/device:OWN:1");
  DeviceBase cpu("/device:CPU:0", "CPU");
  Tensor host = Tensor::FromVector<float>({1, 2, 3});

  auto same = CopyTensor(nullptr, &cpu, {}, host);  // host to host: the same buffer
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->SharesBufferWith(host));

  auto on_a = CopyTensor(nullptr, &a, {}, host);
  ASSERT_TRUE(on_a.ok()) << on_a.status();
  EXPECT_EQ(on_a->allocator(), a.GetAllocator());
  EXPECT_EQ(a.context().log, "h2d");
  auto still_host = CopyTensor(nullptr, &a, {.on_host = true}, host);  // a host-memory arg
  ASSERT_TRUE(still_host.ok());
  EXPECT_TRUE(still_host->SharesBufferWith(host));

  auto on_b = CopyTensor(&a, &b, {}, *on_a);
  ASSERT_TRUE(on_b.ok()) << on_b.status();
  EXPECT_EQ(on_b->allocator(), b.GetAllocator());
  EXPECT_EQ(a.context().log, "h2d d2d");  // the source's context copies out
  auto back = CopyTensor(&b, &cpu, {}, *on_b);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->IsInHostMemory());
  EXPECT_EQ(b.context().log, "d2h");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back->flat<float>()[i], i + 1);

  // Only the device owning the memory may copy out of it.
  auto wrong = CopyTensor(&b, &cpu, {}, *on_a);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("own"), std::string::npos) << wrong.status();
}

}  // namespace
}  // namespace weft
