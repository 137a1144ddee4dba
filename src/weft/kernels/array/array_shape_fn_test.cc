// Tests of the array ops' shape functions on partly known shapes, which kernel tests (whose
// inputs are always known) cannot reach: constant inputs give exact shapes, non-constant ones
// still give the rank where it is known, and impossible combinations are errors naming the node.
#include <gtest/gtest.h>

#include "weft/framework/node_def_util.h"
#include "weft/framework/shape_inference.h"
#include "weft/kernels/testing/array_test_util.h"
#include "weft/ops/register_ops.h"

namespace weft::kernels::array {
namespace {

using testing::IndexScalar;
using testing::IndexVector;
using testing::IsNodeError;

// Runs `op`'s shape function on node "infer" with `shapes`; tensors[i] (when non-null) is the
// constant value of input i. Returns output 0's shape.
StatusOr<PartialShape> Infer(const std::string& op_name, std::vector<PartialShape> shapes,
                             std::vector<const Tensor*> tensors,
                             std::map<std::string, proto::AttrValue> attrs = {}) {
  WEFT_ASSIGN_OR_RETURN(const OpDef* op, ops::AllOps().LookUp(op_name));
  proto::NodeDef node;
  node.set_name("infer");
  node.set_op(op_name);
  for (auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  AddDefaultsToNodeDef(*op, &node);
  InferenceContext context(node, *op, std::move(shapes), std::move(tensors),
                           static_cast<int>(op->outputs.size()));
  WEFT_RETURN_IF_ERROR(op->shape_fn(context));
  return context.output(0);
}

const PartialShape kUnknown = PartialShape::UnknownRank();

TEST(ArrayShapeFnTest, ReshapeUsesTheConstantShape) {
  Tensor target = IndexVector(DataType::kInt32, {-1, 784});
  auto out =
      Infer("Reshape", {PartialShape({-1, 28, 28, 1}), PartialShape({2})}, {nullptr, &target});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 784}));

  out = Infer("Reshape", {PartialShape({10, 28, 28, 1}), PartialShape({2})}, {nullptr, &target});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({10, 784}));

  out = Infer("Reshape", {kUnknown, PartialShape({2})}, {nullptr, &target});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 784}));

  // Not constant: the rank comes from the shape input's length.
  out = Infer("Reshape", {PartialShape({-1, 3}), PartialShape({3})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, -1, -1}));
  out = Infer("Reshape", {PartialShape({-1, 3}), PartialShape({-1})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, kUnknown);

  // [?,5] holds a multiple of 5 elements, never 3.
  Tensor three = IndexVector(DataType::kInt64, {3});
  EXPECT_TRUE(IsNodeError(
      Infer("Reshape", {PartialShape({-1, 5}), PartialShape({1})}, {nullptr, &three}).status(),
      "infer", "[?,5]"));
  EXPECT_TRUE(
      IsNodeError(Infer("Reshape", {PartialShape({2, 3}), PartialShape({2, 2})}, {}).status(),
                  "infer", "rank 1"));
}

TEST(ArrayShapeFnTest, ConstAndPlaceholderReadTheirAttrs) {
  Tensor value(DataType::kFloat, TensorShape({2, 5}));
  auto out = Infer("Const", {}, {},
                   {{"value", MakeAttrValue(value)}, {"dtype", MakeAttrValue(DataType::kFloat)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({2, 5}));
  out = Infer("Placeholder", {}, {},
              {{"dtype", MakeAttrValue(DataType::kFloat)},
               {"shape", MakeAttrValue(PartialShape({-1, 784}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 784}));
}

TEST(ArrayShapeFnTest, MetadataOps) {
  auto out = Infer("Shape", {PartialShape({-1, 3, 4})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({3}));
  out = Infer("Shape", {kUnknown}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1}));
  out = Infer("Size", {kUnknown}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({}));
  out = Infer("Identity", {PartialShape({-1, 2})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 2}));

  Tensor zero = IndexScalar(DataType::kInt32, -1);
  out = Infer("ExpandDims", {PartialShape({-1, 3}), PartialShape({})}, {nullptr, &zero});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 3, 1}));
  out = Infer("ExpandDims", {PartialShape({-1, 3}), PartialShape({})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, -1, -1}));
}

TEST(ArrayShapeFnTest, SqueezeWithUnknownDims) {
  auto out = Infer("Squeeze", {PartialShape({-1, 1, 3})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, kUnknown);  // the ? might be 1 too
  out = Infer("Squeeze", {PartialShape({-1, 1, 3})}, {},
              {{"squeeze_dims", MakeAttrValue(std::vector<int64_t>{1})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 3}));
  out = Infer("Squeeze", {PartialShape({-1, 1, 3})}, {},
              {{"squeeze_dims", MakeAttrValue(std::vector<int64_t>{0})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({1, 3}));
}

TEST(ArrayShapeFnTest, FillFromALengthOnly) {
  auto out = Infer("Fill", {PartialShape({3}), PartialShape({})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, -1, -1}));
}

TEST(ArrayShapeFnTest, TransposeWithPartialInputs) {
  Tensor perm = IndexVector(DataType::kInt32, {1, 0});
  auto out = Infer("Transpose", {PartialShape({-1, 3}), PartialShape({2})}, {nullptr, &perm});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({3, -1}));
  out = Infer("Transpose", {kUnknown, PartialShape({2})}, {nullptr, &perm});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, -1}));
  out = Infer("Transpose", {PartialShape({-1, 3, 4}), PartialShape({-1})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, -1, -1}));
  EXPECT_TRUE(
      IsNodeError(Infer("Transpose", {PartialShape({-1, 3, 4}), PartialShape({2})}, {}).status(),
                  "infer", "rank 3"));
}

TEST(ArrayShapeFnTest, ConcatMergesKnownDims) {
  Tensor axis0 = IndexScalar(DataType::kInt32, 0);
  std::map<std::string, proto::AttrValue> n2 = {{"N", MakeAttrValue(2)}};
  auto out = Infer("ConcatV2", {PartialShape({-1, 3}), PartialShape({2, 3}), PartialShape({})},
                   {nullptr, nullptr, &axis0}, n2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 3}));
  out = Infer("ConcatV2", {PartialShape({2, -1}), PartialShape({5, 3}), PartialShape({})},
              {nullptr, nullptr, &axis0}, n2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({7, 3}));
  out = Infer("ConcatV2", {kUnknown, PartialShape({5, 3}), PartialShape({})}, {}, n2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, -1}));
  EXPECT_TRUE(
      IsNodeError(Infer("ConcatV2", {PartialShape({2, 4}), PartialShape({5, 3}), PartialShape({})},
                        {nullptr, nullptr, &axis0}, n2)
                      .status(),
                  "infer", "agree outside axis"));
}

TEST(ArrayShapeFnTest, SliceBroadcastToAndTile) {
  Tensor begin = IndexVector(DataType::kInt32, {0, 2});
  Tensor size = IndexVector(DataType::kInt32, {-1, 3});
  auto out = Infer("Slice", {PartialShape({-1, 10}), PartialShape({2}), PartialShape({2})},
                   {nullptr, &begin, &size}, {{"Index", MakeAttrValue(DataType::kInt32)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 3}));
  Tensor too_far = IndexVector(DataType::kInt32, {-1, 9});
  EXPECT_TRUE(
      IsNodeError(Infer("Slice", {PartialShape({-1, 10}), PartialShape({2}), PartialShape({2})},
                        {nullptr, &begin, &too_far}, {{"Index", MakeAttrValue(DataType::kInt32)}})
                      .status(),
                  "infer", "out of bounds"));

  Tensor target = IndexVector(DataType::kInt32, {4, 3});
  out = Infer("BroadcastTo", {PartialShape({-1}), PartialShape({2})}, {nullptr, &target});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({4, 3}));
  out = Infer("BroadcastTo", {PartialShape({-1}), PartialShape({2})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, -1}));

  Tensor multiples = IndexVector(DataType::kInt32, {2, 0, 3});
  out = Infer("Tile", {PartialShape({-1, -1, 4}), PartialShape({3})}, {nullptr, &multiples});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 0, 12}));
}

TEST(ArrayShapeFnTest, GatherV2) {
  Tensor axis1 = IndexScalar(DataType::kInt32, 1);
  auto out = Infer("GatherV2", {PartialShape({5, -1, 3}), PartialShape({2, -1}), PartialShape({})},
                   {nullptr, nullptr, &axis1});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({5, 2, -1, 3}));
  Tensor last = IndexScalar(DataType::kInt64, -1);
  out = Infer("GatherV2", {PartialShape({5, 3}), PartialShape({}), PartialShape({})},
              {nullptr, nullptr, &last});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({5}));
  // Axis not constant: only the rank; an unknown rank on either side: nothing.
  out = Infer("GatherV2", {PartialShape({5, 3}), PartialShape({4, 2}), PartialShape({})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, -1, -1}));
  out = Infer("GatherV2", {kUnknown, PartialShape({4}), PartialShape({})},
              {nullptr, nullptr, &axis1});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, kUnknown);

  Tensor axis2 = IndexScalar(DataType::kInt32, 2);
  EXPECT_TRUE(
      IsNodeError(Infer("GatherV2", {PartialShape({5, 3}), PartialShape({4}), PartialShape({})},
                        {nullptr, nullptr, &axis2})
                      .status(),
                  "infer", "axis 2 is out of range [-2, 2) for params of shape [5,3]"));
  EXPECT_TRUE(IsNodeError(
      Infer("GatherV2", {PartialShape({}), PartialShape({4}), PartialShape({})}, {}).status(),
      "infer", "input 0 must have rank at least 1"));
  EXPECT_TRUE(IsNodeError(
      Infer("GatherV2", {PartialShape({5}), PartialShape({4}), PartialShape({1})}, {}).status(),
      "infer", "input 2 must have rank 0"));
  EXPECT_TRUE(
      IsNodeError(Infer("GatherV2", {PartialShape({5}), PartialShape({4}), PartialShape({})}, {},
                        {{"batch_dims", MakeAttrValue(int64_t{1})}})
                      .status(),
                  "infer", "batch_dims must be 0"));
}

TEST(ArrayShapeFnTest, UnsortedSegmentSum) {
  Tensor segments = IndexScalar(DataType::kInt32, 7);
  auto out = Infer("UnsortedSegmentSum",
                   {PartialShape({-1, 4, 3}), PartialShape({6, -1}), PartialShape({})},
                   {nullptr, nullptr, &segments});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({7, 3}));
  out =
      Infer("UnsortedSegmentSum", {PartialShape({6, 3}), PartialShape({6}), PartialShape({})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 3}));
  out = Infer("UnsortedSegmentSum", {PartialShape({6, 3}), kUnknown, PartialShape({})}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, kUnknown);

  EXPECT_TRUE(IsNodeError(
      Infer("UnsortedSegmentSum", {PartialShape({6, 3}), PartialShape({5}), PartialShape({})}, {})
          .status(),
      "infer", "segment_ids shape [5] must be a prefix of data shape [6,3]"));
  EXPECT_TRUE(IsNodeError(
      Infer("UnsortedSegmentSum", {PartialShape({6}), PartialShape({6, 1}), PartialShape({})}, {})
          .status(),
      "infer", "must be a prefix of data shape [6]"));
  Tensor negative = IndexScalar(DataType::kInt64, -3);
  EXPECT_TRUE(IsNodeError(
      Infer("UnsortedSegmentSum", {PartialShape({6}), PartialShape({6}), PartialShape({})},
            {nullptr, nullptr, &negative})
          .status(),
      "infer", "num_segments must be non-negative, but is -3"));
  EXPECT_TRUE(IsNodeError(
      Infer("UnsortedSegmentSum", {PartialShape({6}), PartialShape({6}), PartialShape({1})}, {})
          .status(),
      "infer", "input 2 must have rank 0"));
}

// The input's shape passes through; constant counts are checked against the matrix dims when
// those are known (negative ones, even below -1, mean the whole triangle).
TEST(ArrayShapeFnTest, MatrixBandPart) {
  const PartialShape scalar({});
  Tensor three = IndexScalar(DataType::kInt64, 3), four = IndexScalar(DataType::kInt64, 4);
  Tensor minus_five = IndexScalar(DataType::kInt32, -5);
  auto out =
      Infer("MatrixBandPart", {PartialShape({-1, 3, 4}), scalar, scalar}, {nullptr, &three, &four});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({-1, 3, 4}));
  out = Infer("MatrixBandPart", {PartialShape({2, -1, -1}), scalar, scalar},
              {nullptr, &four, &minus_five});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, PartialShape({2, -1, -1}));
  out = Infer("MatrixBandPart", {kUnknown, kUnknown, kUnknown}, {nullptr, &four, &four});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, kUnknown);

  EXPECT_TRUE(IsNodeError(Infer("MatrixBandPart", {PartialShape({5}), scalar, scalar}, {}).status(),
                          "infer", "input 0 must have rank at least 2, but has shape [5]"));
  EXPECT_TRUE(IsNodeError(
      Infer("MatrixBandPart", {PartialShape({3, 4}), PartialShape({1}), scalar}, {}).status(),
      "infer", "input 1 must have rank 0"));
  EXPECT_TRUE(IsNodeError(
      Infer("MatrixBandPart", {PartialShape({3, 4}), scalar, PartialShape({2})}, {}).status(),
      "infer", "input 2 must have rank 0"));
  EXPECT_TRUE(IsNodeError(
      Infer("MatrixBandPart", {PartialShape({-1, 3, 4}), scalar, scalar}, {nullptr, &four, &three})
          .status(),
      "infer", "num_lower must be negative or at most the number of rows (3), but is 4"));
  Tensor five = IndexScalar(DataType::kInt64, 5);
  EXPECT_TRUE(IsNodeError(
      Infer("MatrixBandPart", {PartialShape({3, 4}), scalar, scalar}, {nullptr, &three, &five})
          .status(),
      "infer",
      "num_upper must be negative or at most the number of columns (4), but "
      "is 5"));
}

}  // namespace
}  // namespace weft::kernels::array
