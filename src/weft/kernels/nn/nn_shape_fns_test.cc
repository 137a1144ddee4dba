// Tests for the nn ops' shape functions on partially known shapes (the kernel tests cover fully
// known ones): unknown ranks and dims propagate, known dims are checked, constant sizes inputs are
// read, and impossible combinations fail naming the node.
#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ConvAttrs;
using testing::InferShapes;
using testing::PoolAttrs;
using testing::Sizes;
using weft::testing::InferShapes;

constexpr int64_t kUnknown = PartialShape::kUnknownDim;

PartialShape Output(const StatusOr<std::vector<PartialShape>>& outputs, int i = 0) {
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  return outputs.ok() ? (*outputs)[i] : PartialShape();
}

void ExpectShapeError(const StatusOr<std::vector<PartialShape>>& outputs,
                      const std::string& fragment) {
  ASSERT_FALSE(outputs.ok());
  EXPECT_TRUE(IsInvalidArgument(outputs.status())) << outputs.status();
  EXPECT_NE(outputs.status().message().find("node 'shape_test'"), std::string::npos)
      << outputs.status();
  EXPECT_NE(outputs.status().message().find(fragment), std::string::npos) << outputs.status();
}

TEST(NnShapeFnsTest, Conv2DOutputSizes) {
  // The Fashion-MNIST CNN: 28x28x1 -> 28x28x32 (SAME), and the VALID/stride-2 variants.
  EXPECT_EQ(Output(InferShapes("Conv2D", {{kUnknown, 28, 28, 1}, {5, 5, 1, 32}},
                               ConvAttrs(1, 1, "SAME"))),
            PartialShape({kUnknown, 28, 28, 32}));
  EXPECT_EQ(
      Output(InferShapes("Conv2D", {{8, 28, 28, 1}, {5, 5, 1, 32}}, ConvAttrs(1, 1, "VALID"))),
      PartialShape({8, 24, 24, 32}));
  EXPECT_EQ(
      Output(InferShapes("Conv2D", {{8, 28, 27, 1}, {5, 4, 1, 32}}, ConvAttrs(2, 2, "VALID"))),
      PartialShape({8, 12, 12, 32}));
  EXPECT_EQ(Output(InferShapes("Conv2D", {{8, 7, 8, 1}, {3, 3, 1, 2}}, ConvAttrs(2, 3, "SAME"))),
            PartialShape({8, 4, 3, 2}));
  // Window larger than the input by less than a stride: VALID gives an empty output.
  EXPECT_EQ(Output(InferShapes("Conv2D", {{1, 2, 2, 1}, {3, 3, 1, 1}}, ConvAttrs(2, 2, "VALID"))),
            PartialShape({1, 0, 0, 1}));
}

TEST(NnShapeFnsTest, Conv2DPartialShapes) {
  EXPECT_EQ(Output(InferShapes("Conv2D", {PartialShape(), {5, 5, 1, 32}}, ConvAttrs(1, 1, "SAME"))),
            PartialShape({kUnknown, kUnknown, kUnknown, 32}));
  EXPECT_EQ(
      Output(InferShapes("Conv2D", {{4, 9, kUnknown, 3}, PartialShape()}, ConvAttrs(1, 1, "SAME"))),
      PartialShape({4, 9, kUnknown, kUnknown}));
  EXPECT_EQ(
      Output(InferShapes("Conv2D", {{4, 9, 9, 3}, {kUnknown, 3, 3, 2}}, ConvAttrs(1, 1, "VALID"))),
      PartialShape({4, kUnknown, 7, 2}));
}

TEST(NnShapeFnsTest, Conv2DErrors) {
  ExpectShapeError(InferShapes("Conv2D", {{1, 5, 5, 3}, {3, 3, 4, 2}}, ConvAttrs(1, 1, "SAME")),
                   "input depth and filter in_channels must be equal, but are 3 and 4");
  ExpectShapeError(InferShapes("Conv2D", {{5, 5, 3}, {3, 3, 3, 2}}, ConvAttrs(1, 1, "SAME")),
                   "input 0 must have rank 4");
  ExpectShapeError(InferShapes("Conv2D", {{1, 2, 2, 1}, {5, 5, 1, 1}}, ConvAttrs(1, 1, "VALID")),
                   "computed output size would be negative: -2");
  AttrMap attrs = ConvAttrs(1, 1, "SAME");
  attrs["strides"] = MakeAttrValue(std::vector<int64_t>{1, 1, 1, 1, 1});
  ExpectShapeError(InferShapes("Conv2D", {PartialShape(), PartialShape()}, attrs),
                   "strides must have 4 elements, but has 5");
  attrs["strides"] = MakeAttrValue(std::vector<int64_t>{1, 1, 1, 2});
  ExpectShapeError(InferShapes("Conv2D", {PartialShape(), PartialShape()}, attrs),
                   "must be 1 in the batch and channel dimensions");
}

TEST(NnShapeFnsTest, Conv2DBackpropInputReadsConstantSizes) {
  Tensor sizes = Sizes({4, 9, 9, 3});
  EXPECT_EQ(Output(InferShapes("Conv2DBackpropInput", {{4}, {3, 3, 3, 2}, {kUnknown, 5, 5, 2}},
                               ConvAttrs(2, 2, "SAME"), {&sizes})),
            PartialShape({4, 9, 9, 3}));
  // Without the value: batch from out_backprop, depth from the filter.
  EXPECT_EQ(Output(InferShapes("Conv2DBackpropInput", {{4}, {3, 3, 3, 2}, {4, 5, 5, 2}},
                               ConvAttrs(2, 2, "SAME"))),
            PartialShape({4, kUnknown, kUnknown, 3}));
  ExpectShapeError(InferShapes("Conv2DBackpropInput", {{4}, {3, 3, 3, 2}, {4, 4, 5, 2}},
                               ConvAttrs(2, 2, "SAME"), {&sizes}),
                   "out_backprop has shape [4,4,5,2], but the convolution");
  ExpectShapeError(InferShapes("Conv2DBackpropInput", {{3}, {3, 3, 3, 2}, {4, 4, 5, 2}},
                               ConvAttrs(2, 2, "SAME")),
                   "input 0 must hold 4 sizes, but has shape [3]");
}

TEST(NnShapeFnsTest, Conv2DBackpropFilterReadsConstantSizes) {
  Tensor sizes = Sizes({3, 3, 3, 2});
  EXPECT_EQ(Output(InferShapes("Conv2DBackpropFilter", {{4, 9, 9, 3}, {4}, {4, 5, 5, 2}},
                               ConvAttrs(2, 2, "SAME"), {nullptr, &sizes})),
            PartialShape({3, 3, 3, 2}));
  EXPECT_EQ(Output(InferShapes("Conv2DBackpropFilter", {{4, 9, 9, 3}, {4}, {4, 5, 5, 2}},
                               ConvAttrs(2, 2, "SAME"))),
            PartialShape({kUnknown, kUnknown, 3, 2}));
  ExpectShapeError(InferShapes("Conv2DBackpropFilter", {{4, 9, 9, 3}, {4}, {4, 5, 5, 7}},
                               ConvAttrs(2, 2, "SAME"), {nullptr, &sizes}),
                   "out_backprop has shape [4,5,5,7]");
}

TEST(NnShapeFnsTest, MaxPool) {
  EXPECT_EQ(Output(InferShapes("MaxPool", {{kUnknown, 28, 28, 32}}, PoolAttrs(2, 2, 2, 2, "SAME"))),
            PartialShape({kUnknown, 14, 14, 32}));
  EXPECT_EQ(Output(InferShapes("MaxPool", {{2, 7, 7, 3}}, PoolAttrs(2, 2, 2, 2, "SAME"))),
            PartialShape({2, 4, 4, 3}));
  EXPECT_EQ(Output(InferShapes("MaxPool", {{2, 7, 7, 3}}, PoolAttrs(3, 2, 2, 2, "VALID"))),
            PartialShape({2, 3, 3, 3}));
  EXPECT_EQ(Output(InferShapes("MaxPool", {PartialShape()}, PoolAttrs(3, 2, 2, 2, "VALID"))),
            PartialShape({kUnknown, kUnknown, kUnknown, kUnknown}));
  ExpectShapeError(InferShapes("MaxPool", {{2, 7, 7}}, PoolAttrs(2, 2, 2, 2, "SAME")),
                   "input 0 must have rank 4");
  EXPECT_EQ(Output(InferShapes("MaxPoolGrad", {{2, 7, 7, 3}, PartialShape(), {2, 4, 4, 3}},
                               PoolAttrs(2, 2, 2, 2, "SAME"))),
            PartialShape({2, 7, 7, 3}));
  ExpectShapeError(InferShapes("MaxPoolGrad", {{2, 7, 7, 3}, {2, 4, 3, 3}, PartialShape()},
                               PoolAttrs(2, 2, 2, 2, "SAME")),
                   "orig_output has shape [2,4,3,3], but pooling orig_input gives shape [2,4,4,3]");
}

TEST(NnShapeFnsTest, AvgPool) {
  EXPECT_EQ(Output(InferShapes("AvgPool", {{kUnknown, 28, 28, 32}}, PoolAttrs(2, 2, 2, 2, "SAME"))),
            PartialShape({kUnknown, 14, 14, 32}));
  EXPECT_EQ(Output(InferShapes("AvgPool", {{2, 7, 7, 3}}, PoolAttrs(3, 2, 2, 2, "VALID"))),
            PartialShape({2, 3, 3, 3}));
  ExpectShapeError(InferShapes("AvgPool", {{2, 7, 7}}, PoolAttrs(2, 2, 2, 2, "SAME")),
                   "input 0 must have rank 4");
  ExpectShapeError(InferShapes("AvgPool", {{1, 2, 2, 1}}, PoolAttrs(5, 5, 1, 1, "VALID")),
                   "computed output size would be negative");
}

TEST(NnShapeFnsTest, AvgPoolGradReadsTheConstantInputShape) {
  Tensor sizes = Sizes({2, 7, 7, 3});
  EXPECT_EQ(Output(InferShapes("AvgPoolGrad", {{4}, {kUnknown, 4, 4, 3}},
                               PoolAttrs(2, 2, 2, 2, "SAME"), {&sizes})),
            PartialShape({2, 7, 7, 3}));
  // Without the value: batch and channels from grad.
  EXPECT_EQ(Output(InferShapes("AvgPoolGrad", {{4}, {2, 4, 4, 3}}, PoolAttrs(2, 2, 2, 2, "SAME"))),
            PartialShape({2, kUnknown, kUnknown, 3}));
  ExpectShapeError(
      InferShapes("AvgPoolGrad", {{4}, {2, 4, 3, 3}}, PoolAttrs(2, 2, 2, 2, "SAME"), {&sizes}),
      "grad has shape [2,4,3,3], but pooling orig_input_shape [2,7,7,3] gives shape "
      "[2,4,4,3]");
  ExpectShapeError(InferShapes("AvgPoolGrad", {{4}, {2, 4, 4}}, PoolAttrs(2, 2, 2, 2, "SAME")),
                   "input 1 must have rank 4");
  ExpectShapeError(InferShapes("AvgPoolGrad", {{3}, {2, 4, 4, 3}}, PoolAttrs(2, 2, 2, 2, "SAME")),
                   "input 0 must hold 4 sizes, but has shape [3]");
}

TEST(NnShapeFnsTest, BiasAdd) {
  EXPECT_EQ(Output(InferShapes("BiasAdd", {{kUnknown, 5, kUnknown}, {7}}, {})),
            PartialShape({kUnknown, 5, 7}));
  EXPECT_EQ(Output(InferShapes("BiasAdd", {PartialShape(), {7}}, {})), PartialShape());
  ExpectShapeError(InferShapes("BiasAdd", {{2, 5}, {7}}, {}),
                   "last dimension of value and size of bias must be equal, but are 5 and 7");
  EXPECT_EQ(Output(InferShapes("BiasAddGrad", {{kUnknown, 3, 8}}, {})), PartialShape({8}));
  EXPECT_EQ(Output(InferShapes("BiasAddGrad", {PartialShape()}, {})), PartialShape({kUnknown}));
}

TEST(NnShapeFnsTest, ActivationGradsMergeTheirInputs) {
  EXPECT_EQ(Output(InferShapes("ReluGrad", {{kUnknown, 3}, {4, kUnknown}}, {})),
            PartialShape({4, 3}));
  EXPECT_EQ(Output(InferShapes("TanhGrad", {PartialShape(), {4, 3}}, {})), PartialShape({4, 3}));
  ExpectShapeError(InferShapes("SigmoidGrad", {{4, 3}, {4, 2}}, {}),
                   "inputs must have the same shape, but are [4,3] and [4,2]");
  EXPECT_EQ(Output(InferShapes("Relu", {{kUnknown, 3}}, {})), PartialShape({kUnknown, 3}));
  EXPECT_EQ(Output(InferShapes("Softplus", {{kUnknown, 3}}, {})), PartialShape({kUnknown, 3}));
  for (bool approximate : {false, true}) {
    const AttrMap attrs = {{"approximate", MakeAttrValue(approximate)}};
    EXPECT_EQ(Output(InferShapes("Gelu", {{kUnknown, 5, 3}}, attrs)),
              PartialShape({kUnknown, 5, 3}));
    EXPECT_EQ(Output(InferShapes("GeluGrad", {{kUnknown, 3}, {4, kUnknown}}, attrs)),
              PartialShape({4, 3}));
    ExpectShapeError(InferShapes("GeluGrad", {{4, 3}, {4, 2}}, attrs),
                     "inputs must have the same shape, but are [4,3] and [4,2]");
  }
}

TEST(NnShapeFnsTest, SoftmaxAndCrossEntropy) {
  EXPECT_EQ(Output(InferShapes("Softmax", {{kUnknown, 10}}, {})), PartialShape({kUnknown, 10}));
  EXPECT_EQ(Output(InferShapes("Softmax", {{2, kUnknown, 10}}, {})),
            PartialShape({2, kUnknown, 10}));
  EXPECT_EQ(Output(InferShapes("LogSoftmax", {PartialShape()}, {})), PartialShape());
  ExpectShapeError(InferShapes("LogSoftmax", {PartialShape({})}, {}),
                   "input 0 must have rank at least 1");
  StatusOr<std::vector<PartialShape>> xent =
      InferShapes("SparseSoftmaxCrossEntropyWithLogits", {{kUnknown, 10}, {128}}, {});
  EXPECT_EQ(Output(xent, 0), PartialShape({128}));
  EXPECT_EQ(Output(xent, 1), PartialShape({128, 10}));
  xent = InferShapes("SparseSoftmaxCrossEntropyWithLogits", {PartialShape(), PartialShape()}, {});
  EXPECT_EQ(Output(xent, 0), PartialShape({kUnknown}));
  EXPECT_EQ(Output(xent, 1), PartialShape({kUnknown, kUnknown}));
  ExpectShapeError(InferShapes("SparseSoftmaxCrossEntropyWithLogits", {{128, 10}, {64}}, {}),
                   "batch sizes of features and labels must be equal, but are 128 and 64");
}

// Each dim is known from whichever input knows it; a disagreement names both inputs.
TEST(NnShapeFnsTest, FusedAttentionMergesItsInputs) {
  const PartialShape unknown;
  StatusOr<std::vector<PartialShape>> forward =
      InferShapes("FusedAttention",
                  {{kUnknown, 4, 5, 8}, {2, kUnknown, 7, kUnknown}, {kUnknown, 4, 7, 3}, {2}}, {});
  EXPECT_EQ(Output(forward, 0), PartialShape({2, 4, 5, 3}));
  EXPECT_EQ(Output(forward, 1), PartialShape({2, 4, 5}));
  forward = InferShapes("FusedAttention", {unknown, unknown, unknown, unknown}, {});
  EXPECT_EQ(Output(forward, 0), PartialShape::UnknownOfRank(4));
  EXPECT_EQ(Output(forward, 1), PartialShape::UnknownOfRank(3));
  StatusOr<std::vector<PartialShape>> grad =
      InferShapes("FusedAttentionGrad",
                  {unknown, {2, 4, 7, 8}, unknown, {kUnknown}, unknown, {2, 4, 5}, {2, 4, 5, 3}},
                  {{"causal", MakeAttrValue(true)}});
  EXPECT_EQ(Output(grad, 0), PartialShape({2, 4, 5, 8}));
  EXPECT_EQ(Output(grad, 1), PartialShape({2, 4, 7, 8}));
  EXPECT_EQ(Output(grad, 2), PartialShape({2, 4, 7, 3}));
}

TEST(NnShapeFnsTest, FusedAttentionTimeMajorLayout) {
  const AttrMap time_major = {{"layout", MakeAttrValue(std::string("BTHD"))}};
  StatusOr<std::vector<PartialShape>> forward = InferShapes(
      "FusedAttention", {{kUnknown, 5, 4, 8}, {2, 7, kUnknown, 8}, {2, 7, 4, 3}, {2}}, time_major);
  EXPECT_EQ(Output(forward, 0), PartialShape({2, 5, 4, 3}));
  EXPECT_EQ(Output(forward, 1), PartialShape({2, 4, 5}));
  StatusOr<std::vector<PartialShape>> grad = InferShapes(
      "FusedAttentionGrad",
      {{2, 5, 4, 8}, {2, 7, 4, 8}, {2, 7, 4, 3}, {2}, {}, {2, 4, 5}, {2, 5, 4, 3}}, time_major);
  EXPECT_EQ(Output(grad, 0), PartialShape({2, 5, 4, 8}));
  EXPECT_EQ(Output(grad, 1), PartialShape({2, 7, 4, 8}));
  EXPECT_EQ(Output(grad, 2), PartialShape({2, 7, 4, 3}));
  ExpectShapeError(
      InferShapes("FusedAttention", {{2, 5, 4, 8}, {2, 7, 4, 8}, {2, 6, 4, 3}, {2}}, time_major),
      "value has key_time 6 (dimension 1 of [2,6,4,3]), but key has 7");
  ExpectShapeError(InferShapes("FusedAttention", {{2, 5, 4, 8}, {2, 7, 4, 8}, {2, 7, 4, 3}, {2}},
                               {{"layout", MakeAttrValue(std::string("TBHD"))}}),
                   "layout");
}

TEST(NnShapeFnsTest, FusedAttentionErrorsNameTheInput) {
  const PartialShape q({2, 4, 5, 8}), k({2, 4, 7, 8}), v({2, 4, 7, 3}), lengths({2});
  ExpectShapeError(InferShapes("FusedAttention", {{2, 4, 5}, k, v, lengths}, {}),
                   "query must have rank 4 [batch, heads, query_time, depth], but has shape "
                   "[2,4,5]");
  ExpectShapeError(InferShapes("FusedAttention", {q, {2, 4, 7, 6}, v, lengths}, {}),
                   "key has depth 6 (dimension 3 of [2,4,7,6]), but query has 8");
  ExpectShapeError(InferShapes("FusedAttention", {q, k, {2, 4, 6, 3}, lengths}, {}),
                   "value has key_time 6 (dimension 2 of [2,4,6,3]), but key has 7");
  ExpectShapeError(InferShapes("FusedAttention", {q, k, {2, 3, 7, 3}, lengths}, {}),
                   "value has heads 3 (dimension 1 of [2,3,7,3]), but query has 4");
  ExpectShapeError(InferShapes("FusedAttention", {q, k, v, {3}}, {}),
                   "key_lengths has batch 3 (dimension 0 of [3]), but query has 2");
  ExpectShapeError(InferShapes("FusedAttention", {q, k, v, {2, 1}}, {}),
                   "key_lengths must have rank 1 [batch]");
  ExpectShapeError(
      InferShapes("FusedAttention", {q, k, v, lengths}, {{"scale", MakeAttrValue(NAN)}}),
      "scale must be finite");
  const PartialShape out({2, 4, 5, 3}), lse({2, 4, 5});
  ExpectShapeError(
      InferShapes("FusedAttentionGrad", {q, k, v, lengths, out, lse, {2, 4, 5, 8}}, {}),
      "output_gradient has value_depth 8 (dimension 3 of [2,4,5,8]), but value has 3");
  ExpectShapeError(InferShapes("FusedAttentionGrad", {q, k, v, lengths, out, {2, 4, 6}, out}, {}),
                   "logsumexp has query_time 6 (dimension 2 of [2,4,6]), but query has 5");
  ExpectShapeError(InferShapes("FusedAttentionGrad", {q, k, v, lengths, lse, lse, out}, {}),
                   "output must have rank 4 [batch, heads, query_time, value_depth]");
}

}  // namespace
}  // namespace weft::kernels
