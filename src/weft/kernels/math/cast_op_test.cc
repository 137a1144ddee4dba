// Tests for the Cast kernel: every pair of dtypes against static_cast, float truncation, casts to
// bool, a thread pool sized input, bfloat16 rounding, and buffer forwarding for same-type casts.
#include <bit>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using weft::testing::KernelRunner;

std::map<std::string, proto::AttrValue> To(DataType type) {
  return {{"DstT", MakeAttrValue(type)}};
}

constexpr DataType kTypes[] = {DataType::kFloat,   DataType::kDouble, DataType::kInt32,
                               DataType::kInt64,   DataType::kUInt8,  DataType::kBool,
                               DataType::kBFloat16};

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

// float32 -> bfloat16 rounds to nearest even and keeps NaN and infinity, on the calling thread and
// on the intra-op threads alike; back to float32 is exact.
TEST(CastOpTest, BFloat16RoundsToNearestEvenAndWidensExactly) {
  KernelRunner runner;
  for (int64_t n : {int64_t{5}, int64_t{100003}}) {
    Tensor x(DataType::kFloat, TensorShape({n}));
    float* v = x.data<float>();
    for (int64_t i = 0; i < n; ++i)
      v[i] = std::bit_cast<float>(0x3f800000u + uint32_t(i) * 0x2345u);
    v[0] = std::numeric_limits<float>::quiet_NaN();
    v[1] = -std::numeric_limits<float>::infinity();
    v[2] = std::bit_cast<float>(0x3f808000u);  // a tie: rounds down to 1, the even neighbour
    StatusOr<Tensor> half = runner.RunOne("Cast", {x}, To(DataType::kBFloat16));
    ASSERT_TRUE(half.ok()) << half.status();
    ASSERT_EQ(half->dtype(), DataType::kBFloat16);
    const bfloat16* h = half->data<bfloat16>();
    EXPECT_TRUE(std::isnan(static_cast<float>(h[0])));
    EXPECT_EQ(h[1].bits, 0xff80u);
    EXPECT_EQ(h[2].bits, 0x3f80u);
    for (int64_t i = 3; i < n; ++i) ASSERT_EQ(h[i].bits, bfloat16(v[i]).bits) << i;
    StatusOr<Tensor> back = runner.RunOne("Cast", {*half}, To(DataType::kFloat));
    ASSERT_TRUE(back.ok()) << back.status();
    for (int64_t i = 1; i < n; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(back->data<float>()[i]), uint32_t{h[i].bits} << 16) << i;
    }
  }
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
