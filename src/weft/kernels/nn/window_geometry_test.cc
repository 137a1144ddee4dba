// Tests for the windowed-op geometry: output sizes and leading padding for SAME and VALID exactly
// as the reference system computes them, pooling windows clipped to the image, and the errors for
// negative VALID sizes.
#include "weft/kernels/nn/window_geometry.h"

#include <gtest/gtest.h>

namespace weft::kernels {
namespace {

proto::NodeDef Node() {
  proto::NodeDef node;
  node.set_name("geometry");
  node.set_op("Conv2D");
  return node;
}

SpatialGeometry Geometry(const TensorShape& input, int64_t window_rows, int64_t window_cols,
                         int64_t stride_rows, int64_t stride_cols, Padding padding) {
  WindowAttrs attrs;
  attrs.stride_rows = stride_rows;
  attrs.stride_cols = stride_cols;
  attrs.padding = padding;
  StatusOr<SpatialGeometry> g =
      ComputeSpatialGeometry(Node(), input, window_rows, window_cols, attrs);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *g : SpatialGeometry();
}

TEST(WindowGeometryTest, SamePadsHalfBeforeRoundingDown) {
  // 28 with a 5 window, stride 1: 28 out, 4 padding, 2 before.
  SpatialGeometry g = Geometry({2, 28, 28, 1}, 5, 5, 1, 1, Padding::kSame);
  EXPECT_EQ(g.out_rows, 28);
  EXPECT_EQ(g.out_cols, 28);
  EXPECT_EQ(g.pad_top, 2);
  EXPECT_EQ(g.pad_left, 2);
  EXPECT_EQ(g.patch_size(), 25);
  // 7 with a 3 window, stride 2: 4 out, padding (4-1)*2+3-7 = 2, 1 before. 8 with a 2 window,
  // stride 2: 4 out, no padding. 7 with a 4 window, stride 1: 7 out, 3 padding, 1 before.
  g = Geometry({1, 7, 8, 3}, 3, 2, 2, 2, Padding::kSame);
  EXPECT_EQ(g.out_rows, 4);
  EXPECT_EQ(g.pad_top, 1);
  EXPECT_EQ(g.out_cols, 4);
  EXPECT_EQ(g.pad_left, 0);
  g = Geometry({1, 7, 7, 3}, 4, 4, 1, 1, Padding::kSame);
  EXPECT_EQ(g.out_rows, 7);
  EXPECT_EQ(g.pad_top, 1);
  // A stride larger than the window: windows skip cells, no padding needed.
  g = Geometry({1, 5, 5, 1}, 1, 1, 3, 3, Padding::kSame);
  EXPECT_EQ(g.out_rows, 2);
  EXPECT_EQ(g.pad_top, 0);
}

TEST(WindowGeometryTest, ValidTruncates) {
  SpatialGeometry g = Geometry({1, 28, 27, 1}, 5, 4, 2, 2, Padding::kValid);
  EXPECT_EQ(g.out_rows, 12);  // (28 - 5 + 2) / 2
  EXPECT_EQ(g.out_cols, 12);  // (27 - 4 + 2) / 2
  EXPECT_EQ(g.pad_top, 0);
  EXPECT_EQ(g.pad_left, 0);
  // A window larger than the input by less than the stride gives an empty output.
  g = Geometry({1, 3, 3, 1}, 5, 5, 3, 3, Padding::kValid);
  EXPECT_EQ(g.out_rows, 0);
}

TEST(WindowGeometryTest, WindowsAreClippedToTheImage) {
  // 7 with a 3 window, stride 2, SAME: 1 padded row before, 1 after.
  SpatialGeometry g = Geometry({1, 7, 7, 1}, 3, 3, 2, 2, Padding::kSame);
  ClippedWindow first = WindowAt(g, 0, 0);
  EXPECT_EQ(first.row_begin, 0);
  EXPECT_EQ(first.row_end, 2);
  EXPECT_EQ(first.col_begin, 0);
  EXPECT_EQ(first.col_end, 2);
  EXPECT_EQ(first.num_cells(), 4);
  ClippedWindow middle = WindowAt(g, 1, 2);
  EXPECT_EQ(middle.row_begin, 1);
  EXPECT_EQ(middle.row_end, 4);
  EXPECT_EQ(middle.col_begin, 3);
  EXPECT_EQ(middle.col_end, 6);
  EXPECT_EQ(middle.num_cells(), 9);
  ClippedWindow last = WindowAt(g, 3, 3);
  EXPECT_EQ(last.row_begin, 5);
  EXPECT_EQ(last.row_end, 7);
  EXPECT_EQ(last.num_cells(), 4);
}

TEST(WindowGeometryTest, NegativeValidSizeIsAnError) {
  WindowAttrs attrs;
  StatusOr<SpatialGeometry> g = ComputeSpatialGeometry(Node(), {1, 2, 9, 1}, 5, 5, attrs);
  ASSERT_FALSE(g.ok());
  EXPECT_TRUE(IsInvalidArgument(g.status()));
  EXPECT_NE(g.status().message().find("node 'geometry' (Conv2D): computed output size would be "
                                      "negative: -2 (input size 2, window 5, stride 1)"),
            std::string::npos)
      << g.status();
}

TEST(WindowGeometryTest, SizesTensorMustHoldFourValidSizes) {
  StatusOr<TensorShape> shape =
      ShapeFromSizesTensor(Node(), Tensor::FromVector<int32_t>({2, 3, 4, 5}), "input_sizes");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(*shape, TensorShape({2, 3, 4, 5}));
  EXPECT_TRUE(IsInvalidArgument(
      ShapeFromSizesTensor(Node(), Tensor::FromVector<int32_t>({2, 3}), "input_sizes").status()));
  EXPECT_TRUE(IsInvalidArgument(
      ShapeFromSizesTensor(Node(), Tensor::FromVector<int32_t>({2, -3, 4, 5}), "input_sizes")
          .status()));
}

}  // namespace
}  // namespace weft::kernels
