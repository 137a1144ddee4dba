// Tests for the Cast kernel: every pair of dtypes against static_cast, float truncation, casts to
// bool, a thread pool sized input, and buffer forwarding for same-type casts.
#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using weft::testing::KernelRunner;

std::map<std::string, proto::AttrValue> To(DataType type) {
  return {{"DstT", MakeAttrValue(type)}};
}

constexpr DataType kTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kInt32,
                               DataType::kInt64, DataType::kUInt8,  DataType::kBool};

// Small values every type holds: 0, 1, ..., 99, 0, 1, ... (bool: false at multiples of 100).
Tensor Values(DataType type, int64_t n) {
  Tensor t;
  VisitNumericType(type, [&]<typename T>() {
    t = Tensor(type, TensorShape({n}));
    for (int64_t i = 0; i < n; ++i) t.data<T>()[i] = static_cast<T>(i % 100);
  });
  return t;
}

TEST(CastOpTest, EveryPairMatchesStaticCast) {
  KernelRunner runner;
  for (DataType src : kTypes) {
    for (DataType dst : kTypes) {
      for (int64_t n : {int64_t{0}, int64_t{7}, int64_t{40000}}) {
        Tensor x = Values(src, n);
        StatusOr<Tensor> y = runner.RunOne("Cast", {x}, To(dst));
        ASSERT_TRUE(y.ok()) << DataTypeName(src) << "->" << DataTypeName(dst) << ": " << y.status();
        Tensor expected(dst, x.shape());
        VisitNumericType(src, [&]<typename S>() {
          VisitNumericType(dst, [&]<typename D>() {
            for (int64_t i = 0; i < n; ++i) expected.data<D>()[i] = static_cast<D>(x.data<S>()[i]);
          });
        });
        EXPECT_TENSOR_EQ(*y, expected) << DataTypeName(src) << "->" << DataTypeName(dst);
      }
    }
  }
}

TEST(CastOpTest, HandValues) {
  KernelRunner runner;
  StatusOr<Tensor> i =
      runner.RunOne("Cast", {Tensor::FromVector<float>({1.7f, -1.7f, 0.2f})}, To(DataType::kInt32));
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_TENSOR_EQ(*i, Tensor::FromVector<int32_t>({1, -1, 0}));
  StatusOr<Tensor> b =
      runner.RunOne("Cast", {Tensor::FromVector<double>({0, -0.5, 3})}, To(DataType::kBool));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TENSOR_EQ(*b, Tensor::FromVector<bool>({false, true, true}));
  StatusOr<Tensor> f =
      runner.RunOne("Cast", {Tensor::FromVector<bool>({true, false})}, To(DataType::kFloat));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TENSOR_EQ(*f, Tensor::FromVector<float>({1, 0}));
  StatusOr<Tensor> u = runner.RunOne("Cast", {Tensor::Scalar<int64_t>(255)}, To(DataType::kUInt8));
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_TENSOR_EQ(*u, Tensor::Scalar<uint8_t>(255));
}

TEST(CastOpTest, SameTypeForwardsTheBuffer) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<int64_t>({1, 2, 3});
  StatusOr<Tensor> y = runner.RunOne("Cast", {x}, To(DataType::kInt64));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(y->SharesBufferWith(x));
}

TEST(CastOpTest, MissingOrUnsupportedDstTIsAnError) {
  KernelRunner runner;
  EXPECT_FALSE(runner.RunOne("Cast", {Tensor::FromVector<float>({1})}).ok());
  EXPECT_FALSE(
      runner.RunOne("Cast", {Tensor::FromVector<float>({1})}, To(DataType::kResource)).ok());
}

}  // namespace
}  // namespace weft::kernels
