// Tests for the math ops' shape functions on partly known inputs (the kernel tests cover fully
// known ones through KernelRunner): unknown dims and ranks, constant vs unknown axes, and the
// errors each shape function raises.
#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"

namespace weft::kernels {
namespace {

using testing::InferShapes;
constexpr int64_t kUnknown = PartialShape::kUnknownDim;

PartialShape Infer1(const std::string& op, const std::vector<PartialShape>& shapes,
                    const std::vector<const Tensor*>& values = {},
                    const std::map<std::string, proto::AttrValue>& attrs = {}) {
  StatusOr<std::vector<PartialShape>> out = InferShapes(op, shapes, values, attrs);
  EXPECT_TRUE(out.ok()) << op << ": " << out.status();
  return out.ok() ? (*out)[0] : PartialShape();
}

TEST(MathShapeFnsTest, BinaryOpsBroadcastPartialShapes) {
  EXPECT_EQ(Infer1("Add", {PartialShape({kUnknown, 3}), PartialShape({3})}),
            PartialShape({kUnknown, 3}));
  EXPECT_EQ(Infer1("Equal", {PartialShape({4, 1, 3}), PartialShape({5, 1})}),
            PartialShape({4, 5, 3}));
  EXPECT_EQ(Infer1("Mul", {PartialShape(), PartialShape({3})}), PartialShape());
  StatusOr<std::vector<PartialShape>> bad =
      InferShapes("Sub", {PartialShape({2, 3}), PartialShape({4})}, {}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("node 's' (Sub)"), std::string::npos);
}

TEST(MathShapeFnsTest, ComparisonsAndMinimumBroadcast) {
  for (const char* op : {"Less", "LessEqual", "Greater", "GreaterEqual", "Minimum"}) {
    EXPECT_EQ(Infer1(op, {PartialShape({kUnknown, 1, 3}), PartialShape({5, 1})}),
              PartialShape({kUnknown, 5, 3}))
        << op;
    EXPECT_EQ(Infer1(op, {PartialShape(), PartialShape({3})}), PartialShape()) << op;
    StatusOr<std::vector<PartialShape>> bad =
        InferShapes(op, {PartialShape({2, 3}), PartialShape({4})}, {}, {});
    ASSERT_FALSE(bad.ok()) << op;
    EXPECT_NE(bad.status().message().find("cannot be broadcast together"), std::string::npos)
        << bad.status();
  }
}

TEST(MathShapeFnsTest, SelectV2BroadcastsAllThreeInputs) {
  EXPECT_EQ(Infer1("SelectV2", {PartialShape({kUnknown, 1}), PartialShape({3}), PartialShape({})}),
            PartialShape({kUnknown, 3}));
  EXPECT_EQ(Infer1("SelectV2", {PartialShape({}), PartialShape({2, 1}), PartialShape({1, 4})}),
            PartialShape({2, 4}));
  EXPECT_EQ(Infer1("SelectV2", {PartialShape({2, 4}), PartialShape(), PartialShape({4})}),
            PartialShape());
  StatusOr<std::vector<PartialShape>> bad =
      InferShapes("SelectV2", {PartialShape({2}), PartialShape({3}), PartialShape({3})}, {}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "node 's' (SelectV2): condition [2], t [3] and e [3] cannot be broadcast together");
  EXPECT_FALSE(
      InferShapes("SelectV2", {PartialShape({3}), PartialShape({3}), PartialShape({2})}, {}, {})
          .ok());
}

TEST(MathShapeFnsTest, UnaryAndCastKeepTheShape) {
  for (const char* op : {"Exp", "Abs", "Sign", "Rsqrt", "Log1p", "Erf"}) {
    EXPECT_EQ(Infer1(op, {PartialShape({kUnknown, 2})}), PartialShape({kUnknown, 2})) << op;
  }
  EXPECT_EQ(Infer1("Cast", {PartialShape({3})}, {}, {{"DstT", MakeAttrValue(DataType::kInt32)}}),
            PartialShape({3}));
}

TEST(MathShapeFnsTest, AddNMergesItsInputs) {
  EXPECT_EQ(
      Infer1("AddN", {PartialShape({kUnknown, 3}), PartialShape({2, kUnknown}), PartialShape()}, {},
             {{"N", MakeAttrValue(3)}}),
      PartialShape({2, 3}));
  StatusOr<std::vector<PartialShape>> bad =
      InferShapes("AddN", {PartialShape({2}), PartialShape({3})}, {}, {{"N", MakeAttrValue(2)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "node 's' (AddN): all inputs must have the same shape, but input 0 is [2] and input 1 "
            "is [3]");
}

TEST(MathShapeFnsTest, MatMul) {
  EXPECT_EQ(Infer1("MatMul", {PartialShape({kUnknown, 4}), PartialShape({4, kUnknown})}),
            PartialShape({kUnknown, kUnknown}));
  EXPECT_EQ(Infer1("MatMul", {PartialShape(), PartialShape({4, 7})}), PartialShape({kUnknown, 7}));
  EXPECT_EQ(Infer1("MatMul", {PartialShape({4, 3}), PartialShape({5, 4})}, {},
                   {{"transpose_a", MakeAttrValue(true)}, {"transpose_b", MakeAttrValue(true)}}),
            PartialShape({3, 5}));
  StatusOr<std::vector<PartialShape>> bad =
      InferShapes("MatMul", {PartialShape({3, 4}), PartialShape({5, 6})}, {}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "node 's' (MatMul): inner dimensions must be equal, but are 4 and 5 for [3,4] x [5,6]");
  EXPECT_FALSE(InferShapes("MatMul", {PartialShape({3}), PartialShape({3, 6})}, {}, {}).ok());
}

TEST(MathShapeFnsTest, BatchMatMulV2) {
  const std::map<std::string, proto::AttrValue> adj_y = {{"adj_y", MakeAttrValue(true)}};
  // Batch dims broadcast; an unknown dim against 1 stays unknown, against a known one takes it.
  EXPECT_EQ(Infer1("BatchMatMulV2", {PartialShape({2, 1, 3, 4}), PartialShape({5, 4, 6})}),
            PartialShape({2, 5, 3, 6}));
  EXPECT_EQ(Infer1("BatchMatMulV2", {PartialShape({kUnknown, 1, 3, kUnknown}),
                                     PartialShape({kUnknown, 4, kUnknown})}),
            PartialShape({kUnknown, kUnknown, 3, kUnknown}));
  EXPECT_EQ(
      Infer1("BatchMatMulV2", {PartialShape({kUnknown, 3, 4}), PartialShape({7, 6, 4})}, {}, adj_y),
      PartialShape({7, 3, 6}));
  EXPECT_EQ(Infer1("BatchMatMulV2", {PartialShape({3, 4}), PartialShape({4, 6})}),
            PartialShape({3, 6}));
  EXPECT_EQ(Infer1("BatchMatMulV2", {PartialShape({4, 3}), PartialShape({2, 6, 4})}, {},
                   {{"adj_x", MakeAttrValue(true)}, {"adj_y", MakeAttrValue(true)}}),
            PartialShape({2, 3, 6}));
  // An unknown rank on either side: the batch rank, so the output rank, is unknown.
  EXPECT_EQ(Infer1("BatchMatMulV2", {PartialShape(), PartialShape({2, 4, 6})}), PartialShape());
  EXPECT_EQ(Infer1("BatchMatMulV2", {PartialShape({3, 4}), PartialShape()}), PartialShape());

  StatusOr<std::vector<PartialShape>> inner = InferShapes(
      "BatchMatMulV2", {PartialShape({kUnknown, 3, 4}), PartialShape({2, 5, 6})}, {}, {});
  ASSERT_FALSE(inner.ok());
  EXPECT_EQ(inner.status().message(),
            "node 's' (BatchMatMulV2): inner dimensions must be equal, but are 4 and 5 for "
            "[?,3,4] x [2,5,6]");
  StatusOr<std::vector<PartialShape>> batch = InferShapes(
      "BatchMatMulV2", {PartialShape({2, 3, 4}), PartialShape({3, kUnknown, 5})}, {}, {});
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().message(),
            "node 's' (BatchMatMulV2): batch dimensions of [2,3,4] and [3,?,5] cannot be "
            "broadcast together");
  StatusOr<std::vector<PartialShape>> rank =
      InferShapes("BatchMatMulV2", {PartialShape({3}), PartialShape({3, 6})}, {}, {});
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("[3]"), std::string::npos) << rank.status();
}

TEST(MathShapeFnsTest, ReductionsWithKnownAndUnknownAxes) {
  Tensor axes = Tensor::FromVector<int32_t>({-1, 0});
  EXPECT_EQ(Infer1("Sum", {PartialShape({kUnknown, 3, 4}), PartialShape({2})}, {nullptr, &axes}),
            PartialShape({3}));
  EXPECT_EQ(Infer1("Max", {PartialShape({kUnknown, 3, 4}), PartialShape({2})}, {nullptr, &axes},
                   {{"keep_dims", MakeAttrValue(true)}}),
            PartialShape({1, 3, 1}));
  // Unknown axes: only the rank survives, and only with keep_dims.
  EXPECT_EQ(Infer1("Mean", {PartialShape({2, 3}), PartialShape({1})}, {},
                   {{"keep_dims", MakeAttrValue(true)}}),
            PartialShape::UnknownOfRank(2));
  EXPECT_EQ(Infer1("Mean", {PartialShape({2, 3}), PartialShape({1})}), PartialShape());
  Tensor bad_axis = Tensor::Scalar<int32_t>(3);
  EXPECT_FALSE(
      InferShapes("Sum", {PartialShape({2, 3}), PartialShape({})}, {nullptr, &bad_axis}, {}).ok());
  EXPECT_FALSE(InferShapes("Sum", {PartialShape({2, 3}), PartialShape({1, 1})}, {}, {}).ok());
}

TEST(MathShapeFnsTest, ArgMax) {
  Tensor dim = Tensor::Scalar<int64_t>(-1);
  EXPECT_EQ(Infer1("ArgMax", {PartialShape({kUnknown, 3, 4}), PartialShape({})}, {nullptr, &dim}),
            PartialShape({kUnknown, 3}));
  EXPECT_EQ(Infer1("ArgMax", {PartialShape({2, 3, 4}), PartialShape({})}),
            PartialShape::UnknownOfRank(2));
  EXPECT_FALSE(InferShapes("ArgMax", {PartialShape({}), PartialShape({})}, {}, {}).ok());
  EXPECT_FALSE(InferShapes("ArgMax", {PartialShape({2}), PartialShape({1})}, {}, {}).ok());
}

TEST(MathShapeFnsTest, BroadcastGradientArgs) {
  StatusOr<std::vector<PartialShape>> unknown =
      InferShapes("BroadcastGradientArgs", {PartialShape({3}), PartialShape({kUnknown})}, {}, {});
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ((*unknown)[0], PartialShape::UnknownOfRank(1));
  EXPECT_EQ((*unknown)[1], PartialShape::UnknownOfRank(1));
  Tensor s0 = Tensor::FromVector<int32_t>({4, 1, 3});
  Tensor s1 = Tensor::FromVector<int32_t>({5, 1});
  StatusOr<std::vector<PartialShape>> known =
      InferShapes("BroadcastGradientArgs", {PartialShape({3}), PartialShape({2})}, {&s0, &s1}, {});
  ASSERT_TRUE(known.ok()) << known.status();
  EXPECT_EQ((*known)[0], PartialShape({1}));
  EXPECT_EQ((*known)[1], PartialShape({2}));
  EXPECT_FALSE(
      InferShapes("BroadcastGradientArgs", {PartialShape({3, 1}), PartialShape({2})}, {}, {}).ok());
}

}  // namespace
}  // namespace weft::kernels
