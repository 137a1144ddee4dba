#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "weft/framework/resource_handle.h"
#include "weft/kernels/testing/state_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::state {
namespace {

using testing::Assign;
using testing::Contains;
using testing::MakeHandle;
using testing::MakeVariable;
using testing::MustRead;
using testing::Read;

using weft::testing::KernelRunner;

TEST(VarHandleOpTest, HandleNamesTheVariable) {
  KernelRunner runner;
  Tensor handle = MakeHandle(runner, "dense/w", DataType::kFloat, PartialShape({2, -1}));
  StatusOr<const ResourceHandle*> h = HandleFromTensor(handle);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ((*h)->name, "dense/w");
  EXPECT_EQ((*h)->container, "");
  EXPECT_EQ((*h)->device, runner.device()->name());
  EXPECT_EQ((*h)->dtype, DataType::kFloat);
  EXPECT_EQ((*h)->shape, PartialShape({2, -1}));
}

TEST(VarHandleOpTest, EmptySharedNameMeansTheNodeName) {
  KernelRunner runner;
  StatusOr<Tensor> handle = runner.RunOne(
      "VarHandleOp", {},
      {{"dtype", MakeAttrValue(DataType::kFloat)}, {"shape", MakeAttrValue(PartialShape())}});
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ((*HandleFromTensor(*handle))->name, "test_VarHandleOp");
}

template <typename T>
class AssignReadTest : public ::testing::Test {};
using AssignableTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(AssignReadTest, AssignableTypes);

TYPED_TEST(AssignReadTest, AssignThenReadGivesTheValue) {
  using T = TypeParam;
  constexpr DataType kType = DataTypeToEnum<T>::value;
  KernelRunner runner;
  Tensor value = Tensor::FromVector<T>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Tensor handle = MakeHandle(runner, "v", kType, PartialShape({2, 3}));
  ASSERT_TRUE(Assign(runner, handle, value).ok());
  EXPECT_TENSOR_EQ(MustRead(runner, handle, kType), value);

  // AssignAdd, then AssignSub, against a reference loop.
  Tensor delta = Tensor::FromVector<T>({10, 20, 30, 40, 50, 60}, TensorShape({2, 3}));
  ASSERT_TRUE(runner.Run("AssignAddVariableOp", {handle, delta}).ok());
  Tensor expected(kType, TensorShape({2, 3}));
  for (int i = 0; i < 6; ++i) expected.data<T>()[i] = value.data<T>()[i] + delta.data<T>()[i];
  EXPECT_TENSOR_EQ(MustRead(runner, handle, kType), expected);
  ASSERT_TRUE(runner.Run("AssignSubVariableOp", {handle, value}).ok());
  EXPECT_TENSOR_EQ(MustRead(runner, handle, kType), delta);

  // Scalar and empty variables.
  Tensor scalar = MakeVariable(runner, "s", Tensor::Scalar<T>(7));
  ASSERT_TRUE(runner.Run("AssignAddVariableOp", {scalar, Tensor::Scalar<T>(2)}).ok());
  EXPECT_TENSOR_EQ(MustRead(runner, scalar, kType), Tensor::Scalar<T>(9));
  Tensor empty_value(kType, TensorShape({0, 3}));
  Tensor empty = MakeVariable(runner, "e", empty_value);
  ASSERT_TRUE(runner.Run("AssignAddVariableOp", {empty, empty_value}).ok());
  EXPECT_EQ(MustRead(runner, empty, kType).shape(), TensorShape({0, 3}));
}

TEST(AssignUpdateTest, LargeVariablesMatchAReferenceLoop) {
  for (int threads : {1, 2}) {
    KernelRunner runner(threads);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1, 1);
    const int64_t n = 100'003;
    std::vector<float> a(n), b(n), sum(n), diff(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = dist(rng);
      b[i] = dist(rng);
      sum[i] = a[i] + b[i];
      diff[i] = sum[i] - a[i];
    }
    Tensor handle = MakeVariable(runner, "big", Tensor::FromVector(a));
    ASSERT_TRUE(runner.Run("AssignAddVariableOp", {handle, Tensor::FromVector(b)}).ok());
    EXPECT_TENSOR_EQ(MustRead(runner, handle, DataType::kFloat), Tensor::FromVector(sum));
    ASSERT_TRUE(runner.Run("AssignSubVariableOp", {handle, Tensor::FromVector(a)}).ok());
    EXPECT_TENSOR_EQ(MustRead(runner, handle, DataType::kFloat), Tensor::FromVector(diff));
  }
}

TEST(ReadVariableOpTest, ReadBeforeAssignIsFailedPrecondition) {
  KernelRunner runner;
  Tensor handle = MakeHandle(runner, "dense/w", DataType::kFloat);
  Status status = Read(runner, handle, DataType::kFloat).status();
  EXPECT_TRUE(IsFailedPrecondition(status)) << status;
  EXPECT_TRUE(Contains(status, "variable 'dense/w' is not initialized")) << status;
  EXPECT_TRUE(Contains(status, "node 'test_ReadVariableOp' (ReadVariableOp)")) << status;

  Status add = runner.Run("AssignAddVariableOp", {handle, Tensor::Scalar(1.0f)}).status();
  EXPECT_TRUE(IsFailedPrecondition(add)) << add;
  EXPECT_TRUE(Contains(add, "variable 'dense/w' is not initialized")) << add;
}

TEST(AssignVariableOpTest, ShapeOtherThanDeclaredIsInvalidArgument) {
  KernelRunner runner;
  Tensor handle = MakeHandle(runner, "dense/w", DataType::kFloat, PartialShape({2, 3}));
  Status status = Assign(runner, handle, Tensor::FromVector<float>({1, 2, 3}));
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_TRUE(Contains(status, "'dense/w'")) << status;
  EXPECT_TRUE(Contains(status, "[3]")) << status;
  EXPECT_TRUE(Contains(status, "[2,3]")) << status;
  EXPECT_TRUE(Contains(status, "test_AssignVariableOp")) << status;

  // A partly known declared shape accepts any compatible value.
  Tensor partial = MakeHandle(runner, "p", DataType::kFloat, PartialShape({-1, 2}));
  EXPECT_TRUE(Assign(runner, partial, Tensor(DataType::kFloat, TensorShape({5, 2}))).ok());
  EXPECT_TRUE(
      IsInvalidArgument(Assign(runner, partial, Tensor(DataType::kFloat, TensorShape({5, 3})))));
  // An undeclared shape accepts anything, and the shape may change.
  Tensor open = MakeHandle(runner, "o", DataType::kFloat);
  EXPECT_TRUE(Assign(runner, open, Tensor(DataType::kFloat, TensorShape({4}))).ok());
  EXPECT_TRUE(Assign(runner, open, Tensor(DataType::kFloat, TensorShape({2, 2}))).ok());
  EXPECT_EQ(MustRead(runner, open, DataType::kFloat).shape(), TensorShape({2, 2}));
}

TEST(AssignVariableOpTest, OtherDtypeIsInvalidArgument) {
  KernelRunner runner;
  Tensor handle = MakeHandle(runner, "v", DataType::kFloat, PartialShape({1}));
  Status assign = Assign(runner, handle, Tensor::FromVector<double>({1.0}));
  EXPECT_TRUE(IsInvalidArgument(assign)) << assign;
  EXPECT_TRUE(Contains(assign, "'v'")) << assign;
  EXPECT_TRUE(Contains(assign, "float64")) << assign;

  ASSERT_TRUE(Assign(runner, handle, Tensor::FromVector<float>({1.0f})).ok());
  Status read = Read(runner, handle, DataType::kDouble).status();
  EXPECT_TRUE(IsInvalidArgument(read)) << read;
  EXPECT_TRUE(Contains(read, "test_ReadVariableOp")) << read;

  // A second handle to the same variable that claims another dtype.
  Tensor liar = MakeHandle(runner, "v", DataType::kDouble);
  Status lied = Read(runner, liar, DataType::kDouble).status();
  EXPECT_TRUE(IsInvalidArgument(lied)) << lied;
  EXPECT_TRUE(Contains(lied, "holds float32")) << lied;
  EXPECT_TRUE(IsInvalidArgument(Assign(runner, liar, Tensor::FromVector<double>({1.0}))));
}

TEST(AssignUpdateTest, ShapeMismatchNamesVariableAndShapes) {
  KernelRunner runner;
  Tensor handle = MakeVariable(runner, "acc", Tensor::FromVector<float>({1, 2}));
  Status status =
      runner.Run("AssignSubVariableOp", {handle, Tensor::FromVector<float>({1})}).status();
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_TRUE(Contains(status, "'acc'")) << status;
  EXPECT_TRUE(Contains(status, "[1]")) << status;
  EXPECT_TRUE(Contains(status, "[2]")) << status;
  EXPECT_TRUE(Contains(status, "test_AssignSubVariableOp")) << status;
}

TEST(ResourceInputTest, NonHandleIsInvalidArgument) {
  KernelRunner runner;
  Tensor not_a_handle(DataType::kResource, TensorShape());
  Status status = Read(runner, not_a_handle, DataType::kFloat).status();
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_TRUE(Contains(status, "test_ReadVariableOp")) << status;
}

TEST(ResourceInputTest, HandleOfAnotherDeviceIsInvalidArgument) {
  KernelRunner runner;
  ResourceHandle other;
  other.device = "/job:localhost/replica:0/task:0/device:CPU:7";
  other.name = "v";
  other.dtype = DataType::kFloat;
  Status status = Read(runner, MakeResourceHandleTensor(other), DataType::kFloat).status();
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_TRUE(Contains(status, "CPU:7")) << status;
}

// A value read before an update keeps its values; the update then copies first.
TEST(CopyOnWriteTest, ReadValuesNeverChangeUnderTheReader) {
  KernelRunner runner;
  Tensor handle = MakeVariable(runner, "v", Tensor::FromVector<float>({1, 2, 3}));
  Tensor before = MustRead(runner, handle, DataType::kFloat);
  Tensor again = MustRead(runner, handle, DataType::kFloat);
  EXPECT_TRUE(before.SharesBufferWith(again));  // reads do not copy

  ASSERT_TRUE(
      runner.Run("AssignAddVariableOp", {handle, Tensor::FromVector<float>({1, 1, 1})}).ok());
  EXPECT_TENSOR_EQ(before, Tensor::FromVector<float>({1, 2, 3}));
  Tensor after = MustRead(runner, handle, DataType::kFloat);
  EXPECT_TENSOR_EQ(after, Tensor::FromVector<float>({2, 3, 4}));
  EXPECT_FALSE(after.SharesBufferWith(before));

  // Assign with a reader present replaces the buffer instead of writing into it.
  ASSERT_TRUE(Assign(runner, handle, Tensor::FromVector<float>({9, 9, 9})).ok());
  EXPECT_TENSOR_EQ(after, Tensor::FromVector<float>({2, 3, 4}));
  EXPECT_TENSOR_EQ(MustRead(runner, handle, DataType::kFloat),
                   Tensor::FromVector<float>({9, 9, 9}));
}

TEST(CopyOnWriteTest, UnsharedBuffersAreUpdatedInPlace) {
  KernelRunner runner;
  Tensor handle = MakeVariable(runner, "v", Tensor::FromVector<float>({1, 2, 3}));
  const void* address = MustRead(runner, handle, DataType::kFloat).raw_data();  // read dropped
  ASSERT_TRUE(
      runner.Run("AssignAddVariableOp", {handle, Tensor::FromVector<float>({1, 1, 1})}).ok());
  ASSERT_TRUE(Assign(runner, handle, Tensor::FromVector<float>({5, 5, 5})).ok());
  Tensor now = MustRead(runner, handle, DataType::kFloat);
  EXPECT_EQ(now.raw_data(), address);
  EXPECT_TENSOR_EQ(now, Tensor::FromVector<float>({5, 5, 5}));
}

TEST(VarIsInitializedOpTest, FalseUntilAssigned) {
  KernelRunner runner;
  Tensor handle = MakeHandle(runner, "v", DataType::kInt64);
  StatusOr<Tensor> before = runner.RunOne("VarIsInitializedOp", {handle});
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_TENSOR_EQ(*before, Tensor::Scalar(false));
  ASSERT_TRUE(Assign(runner, handle, Tensor::Scalar<int64_t>(3)).ok());
  EXPECT_TENSOR_EQ(*runner.RunOne("VarIsInitializedOp", {handle}), Tensor::Scalar(true));
}

TEST(DestroyResourceOpTest, DeletesTheVariable) {
  KernelRunner runner;
  Tensor handle = MakeVariable(runner, "v", Tensor::Scalar(1.0));
  ASSERT_TRUE(runner.Run("DestroyResourceOp", {handle}).ok());
  EXPECT_TRUE(IsFailedPrecondition(Read(runner, handle, DataType::kDouble).status()));
  EXPECT_TENSOR_EQ(*runner.RunOne("VarIsInitializedOp", {handle}), Tensor::Scalar(false));
  // Missing: ignored by default, an error naming the node otherwise.
  EXPECT_TRUE(runner.Run("DestroyResourceOp", {handle}).ok());
  Status strict =
      runner.Run("DestroyResourceOp", {handle}, {{"ignore_lookup_error", MakeAttrValue(false)}})
          .status();
  EXPECT_TRUE(IsNotFound(strict)) << strict;
  EXPECT_TRUE(Contains(strict, "test_DestroyResourceOp")) << strict;
  EXPECT_TRUE(Contains(strict, "'v'")) << strict;
}

// Concurrent updates are serialised by the Var's mutex; concurrent readers see whole values.
TEST(VariableOpsTest, ConcurrentUpdatesAndReads) {
  KernelRunner runner;
  Tensor handle = MakeVariable(runner, "count", Tensor::FromVector<int64_t>({0, 0, 0, 0}));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(
            runner.Run("AssignAddVariableOp", {handle, Tensor::FromVector<int64_t>({1, 1, 1, 1})})
                .ok());
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 200; ++i) {
      Tensor value = MustRead(runner, handle, DataType::kInt64);
      auto v = value.flat<int64_t>();
      EXPECT_TRUE(v[0] == v[1] && v[1] == v[2] && v[2] == v[3]) << value.DebugString();
    }
  });
  for (auto& thread : threads) thread.join();
  EXPECT_TENSOR_EQ(MustRead(runner, handle, DataType::kInt64),
                   Tensor::FromVector<int64_t>({800, 800, 800, 800}));
}

TEST(VariableOpsTest, SeparateRunnersHaveSeparateVariables) {
  KernelRunner first, second;
  Tensor handle = MakeVariable(first, "v", Tensor::Scalar(1.0f));
  Tensor other = MakeHandle(second, "v", DataType::kFloat);
  EXPECT_TRUE(IsFailedPrecondition(Read(second, other, DataType::kFloat).status()));
}

}  // namespace
}  // namespace weft::kernels::state
