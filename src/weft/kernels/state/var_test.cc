#include "weft/kernels/state/var.h"

#include <thread>

#include <gtest/gtest.h>

#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::state {
namespace {

// The context of a NoOp kernel on `device`: enough for CopyElements and PrepareToUpdate.
class DeviceContext {
 public:
  explicit DeviceContext(DeviceBase* device) {
    node_.set_name("noop");
    node_.set_op("NoOp");
    const OpDef* op = *ops::AllOps().LookUp("NoOp");
    kernel_ = std::move(kernels::AllKernels().CreateKernel(node_, *op, device)).value();
    params_.kernel = kernel_.get();
    params_.device = device;
    params_.inputs = &inputs_;
    context_ = std::make_unique<OpKernelContext>(params_);
  }
  OpKernelContext* get() { return context_.get(); }

 private:
  proto::NodeDef node_;
  std::unique_ptr<OpKernel> kernel_;
  std::vector<Tensor> inputs_;
  OpKernelContext::Params params_;
  std::unique_ptr<OpKernelContext> context_;
};

TEST(VarTest, DebugString) {
  Var var("w", DataType::kFloat);
  EXPECT_EQ(var.DebugString(), "Var<float32, uninitialized>");
  {
    MutexLock lock(*var.mu());
    *var.tensor() = Tensor(DataType::kFloat, TensorShape({2, 3}));
    var.set_initialized();
  }
  EXPECT_EQ(var.DebugString(), "Var<float32, [2,3]>");
}

TEST(VarTest, PrepareToUpdateCopiesOnlyWhenShared) {
  weft::testing::KernelRunner runner(2);
  DeviceContext context(runner.device());
  for (int64_t n : {int64_t{5}, kMinParallelElements + 3}) {
    Var var("w", DataType::kDouble);
    MutexLock lock(*var.mu());
    std::vector<double> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = 0.5 * i;
    *var.tensor() = Tensor::FromVector(values);
    var.set_initialized();
    const void* address = var.tensor()->raw_data();
    ASSERT_TRUE(PrepareToUpdate(context.get(), &var).ok());
    EXPECT_EQ(var.tensor()->raw_data(), address);  // sole owner: no copy

    Tensor reader = *var.tensor();
    ASSERT_TRUE(PrepareToUpdate(context.get(), &var).ok());
    EXPECT_NE(var.tensor()->raw_data(), address);
    EXPECT_TRUE(var.tensor()->RefCountIsOne());
    EXPECT_TENSOR_EQ(*var.tensor(), reader);
  }
}

TEST(VarLocksTest, LocksEachVarOnceInAnyOrder) {
  Var a("a", DataType::kFloat), b("b", DataType::kFloat);
  int counter = 0;
  auto work = [&](bool reversed) {
    for (int i = 0; i < 2000; ++i) {
      VarLocks locks(reversed ? std::vector<Var*>{&b, &a, &b} : std::vector<Var*>{&a, &b});
      ++counter;
    }
  };
  std::thread first(work, false), second(work, true);
  first.join();
  second.join();
  EXPECT_EQ(counter, 4000);
}

}  // namespace
}  // namespace weft::kernels::state
