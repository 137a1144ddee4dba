// Numeric checks of the array gradients in float64: the reshaping ops, Transpose, ConcatV2, Slice,
// Tile, BroadcastTo, Fill and MatrixBandPart, each with constant index inputs and known shapes
// (the static paths) and with fed index inputs or unknown dims (the graph-computed paths); and the
// ops that block gradients. GatherV2 and UnsortedSegmentSum are checked in gather_grad_test.cc.
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/graph/gradients/gradients.h"
#include "weft/testing/gradient_checker.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

using testing::Float64Placeholder;
using testing::GradientCheckOptions;
using testing::GradientNear;
using testing::kAllShapeKnowledges;
using testing::kGradientTolerance;
using testing::RandomTensor;
using testing::RunGraph;
using testing::ShapeKnowledge;

// An int32 index input: a Const, or a placeholder fed with `values` through `options`.
Output IndexInput(const Scope& scope, const Tensor& values, bool fed,
                  GradientCheckOptions* options) {
  if (!fed) return ops::Const(scope, values);
  Output placeholder = ops::Placeholder(scope, values.dtype());
  options->extra_feeds.emplace_back(placeholder.name(), values);
  return placeholder;
}

Tensor Ints(const std::vector<int32_t>& values) { return Tensor::FromVector(values); }

// Makes the index inputs of an op under test: `index(values)` is a Const or a fed placeholder.
using IndexMaker = std::function<Output(const std::vector<int32_t>& values)>;
using IndexedOpBuilder =
    std::function<Output(const Scope& scope, const Output& x, const IndexMaker& index)>;

// Checks dy/dx numerically, y = build(x, ...) with x of `shape`, for each of `knowledges` and with
// the index inputs constant and fed (the static and the graph-computed gradient paths).
void CheckWithIndexInputs(const TensorShape& shape, const std::vector<ShapeKnowledge>& knowledges,
                          int seed, const IndexedOpBuilder& build, const std::string& label) {
  for (ShapeKnowledge knowledge : knowledges) {
    for (bool fed : {false, true}) {
      Scope root = Scope::NewRootScope();
      GradientCheckOptions options;
      Output x = Float64Placeholder(root.WithOpName("x"), shape, knowledge);
      IndexMaker index = [&](const std::vector<int32_t>& values) {
        return IndexInput(root, Ints(values), fed, &options);
      };
      Output y = build(root, x, index);
      EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor(shape, -1, 1, seed)}, y, kGradientTolerance,
                               options))
          << shape << " " << label << " fed " << fed;
    }
  }
}

const std::vector<ShapeKnowledge> kKnownRank = {ShapeKnowledge::kFull, ShapeKnowledge::kRankOnly};
const std::vector<ShapeKnowledge> kAnyKnowledge(std::begin(kAllShapeKnowledges),
                                                std::end(kAllShapeKnowledges));

TEST(ArrayGradTest, Identity) {
  Scope root = Scope::NewRootScope();
  Output x = Float64Placeholder(root.WithOpName("x"), TensorShape({2, 3}));
  EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor({2, 3}, -1, 1, 1)}, ops::Identity(root, x),
                           kGradientTolerance));
}

TEST(ArrayGradTest, Reshape) {
  for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
    for (const Tensor& target : {Ints({3, 2}), Ints({-1}), Ints({1, 6, 1})}) {
      for (bool fed : {false, true}) {
        Scope root = Scope::NewRootScope();
        GradientCheckOptions options;
        Output x = Float64Placeholder(root.WithOpName("x"), TensorShape({2, 3}), knowledge);
        Output y = ops::Reshape(root, x, IndexInput(root, target, fed, &options));
        EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor({2, 3}, -1, 1, 2)}, y, kGradientTolerance,
                                 options))
            << target.DebugString();
      }
    }
  }
}

TEST(ArrayGradTest, ExpandDims) {
  for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
    for (int axis : {0, 1, 2, -1}) {
      Scope root = Scope::NewRootScope();
      Output x = Float64Placeholder(root.WithOpName("x"), TensorShape({2, 3}), knowledge);
      EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor({2, 3}, -1, 1, 3)},
                               ops::ExpandDims(root, x, axis), kGradientTolerance))
          << "axis " << axis;
    }
  }
}

TEST(ArrayGradTest, Squeeze) {
  const TensorShape shape({1, 2, 1, 3});
  for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
    for (const std::vector<int64_t>& axes :
         {std::vector<int64_t>{}, std::vector<int64_t>{0}, std::vector<int64_t>{-2, 0}}) {
      if (knowledge != ShapeKnowledge::kFull && axes.empty()) continue;  // needs known dims
      Scope root = Scope::NewRootScope();
      Output x = Float64Placeholder(root.WithOpName("x"), shape, knowledge);
      EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor(shape, -1, 1, 4)},
                               ops::Squeeze(root, x, axes), kGradientTolerance))
          << "axes [" << StrJoin(axes, ",") << "]";
    }
  }
}

TEST(ArrayGradTest, Transpose) {
  struct Case {
    TensorShape shape;
    std::vector<int32_t> perm;
  };
  const Case cases[] = {
      {{2, 3}, {1, 0}}, {{2, 3, 4}, {2, 0, 1}}, {{2, 3, 4}, {1, 2, 0}}, {{2, 3}, {0, 1}}, {{}, {}}};
  for (const Case& c : cases) {
    CheckWithIndexInputs(
        c.shape, kKnownRank, 5,
        [&](const Scope& root, const Output& x, const IndexMaker& index) {
          return ops::Transpose(root, x, index(c.perm));
        },
        StrCat("perm [", StrJoin(c.perm, ","), "]"));
  }
  // An int64 permutation.
  Scope root = Scope::NewRootScope();
  Output x = Float64Placeholder(root.WithOpName("x"), TensorShape({2, 3, 4}));
  Output y = ops::Transpose(root, x, Tensor::FromVector<int64_t>({2, 1, 0}));
  EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor({2, 3, 4}, -1, 1, 6)}, y, kGradientTolerance));
}

TEST(ArrayGradTest, ConcatV2) {
  struct Case {
    std::vector<TensorShape> shapes;
    int axis;
  };
  const Case cases[] = {{{{2, 1}, {2, 3}, {2, 2}}, 1},
                        {{{2, 1}, {2, 3}, {2, 2}}, -1},
                        {{{1, 3}, {2, 3}}, 0},
                        {{{2, 0, 2}, {2, 2, 2}, {2, 1, 2}}, 1}};
  for (const Case& c : cases) {
    // Known shapes, rank-only shapes, one unknown in the middle (offsets turn dynamic), fed axis.
    for (int mode = 0; mode < 4; ++mode) {
      Scope root = Scope::NewRootScope();
      GradientCheckOptions options;
      std::vector<Output> xs;
      std::vector<Tensor> values;
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        ShapeKnowledge knowledge = ShapeKnowledge::kFull;
        if (mode == 1 || (mode == 2 && i == 1)) knowledge = ShapeKnowledge::kRankOnly;
        xs.push_back(Float64Placeholder(root.WithOpName("x"), c.shapes[i], knowledge));
        values.push_back(RandomTensor(c.shapes[i], -1, 1, 7 + i));
      }
      Output axis = IndexInput(root, Tensor::Scalar<int32_t>(c.axis), mode == 3, &options);
      Output y = ops::Concat(root, xs, axis);
      EXPECT_TRUE(GradientNear(root, xs, values, y, kGradientTolerance, options))
          << "axis " << c.axis << " mode " << mode;
    }
  }
}

TEST(ArrayGradTest, Slice) {
  struct Case {
    TensorShape shape;
    std::vector<int32_t> begin, size;
  };
  const Case cases[] = {{{4, 5}, {1, 2}, {2, -1}},
                        {{3, 4, 2}, {0, 1, 0}, {3, 2, 1}},
                        {{3, 4, 2}, {0, 0, 0}, {3, 4, 2}},
                        {{4}, {1}, {0}},
                        {{5}, {4}, {1}}};
  for (const Case& c : cases) {
    CheckWithIndexInputs(
        c.shape, kKnownRank, 10,
        [&](const Scope& root, const Output& x, const IndexMaker& index) {
          return ops::Slice(root, x, index(c.begin), index(c.size));
        },
        StrCat("begin [", StrJoin(c.begin, ","), "] size [", StrJoin(c.size, ","), "]"));
  }
  // int64 begin and size.
  Scope root = Scope::NewRootScope();
  Output x =
      Float64Placeholder(root.WithOpName("x"), TensorShape({3, 4}), ShapeKnowledge::kRankOnly);
  Output y =
      ops::Slice(root, x, Tensor::FromVector<int64_t>({1, 1}), Tensor::FromVector<int64_t>({2, 2}));
  EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor({3, 4}, -1, 1, 11)}, y, kGradientTolerance));
}

TEST(ArrayGradTest, GradientsKeepTheStaticShapesOfTheirInputs) {
  // The gradients that reshape to Shape(x) at run time (a broadcasting Add's, a Slice's with a
  // begin known only then) still have x's known dims when built: the all-reduce packs gradients
  // into buckets by their static sizes, and an unknown one would get a collective of its own.
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble, PartialShape({-1, 8, 4}));
  Output y = ops::Placeholder(root.WithOpName("y"), DataType::kDouble, PartialShape({-1, 8, 4}));
  Output table =
      ops::Placeholder(root.WithOpName("table"), DataType::kDouble, PartialShape({16, 4}));
  Output begin = ops::Placeholder(root.WithOpName("begin"), DataType::kInt32, PartialShape({2}));
  Output rows = ops::Slice(root, table, begin, Tensor::FromVector<int32_t>({8, 4}));
  Output sum = ops::Add(root, ops::Add(root, x, y), rows);
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {sum}, {x, y, table}, &grads).ok());
  EXPECT_EQ(grads[0].shape(), PartialShape({-1, 8, 4}));
  EXPECT_EQ(grads[1].shape(), PartialShape({-1, 8, 4}));
  EXPECT_EQ(grads[2].shape(), PartialShape({16, 4}));
  // And the values are right: the table's gradient sums the batch into the sliced rows.
  Tensor ones =
      Tensor::FromVector<double>(std::vector<double>(2 * 8 * 4, 1.0), TensorShape({2, 8, 4}));
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root,
               {{x.name(), ones},
                {y.name(), ones},
                {table.name(),
                 Tensor::FromVector<double>(std::vector<double>(64, 0.5), TensorShape({16, 4}))},
                {begin.name(), Tensor::FromVector<int32_t>({3, 0})}},
               grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], ones);
  std::vector<double> expected(64, 0.0);
  for (int i = 3 * 4; i < 11 * 4; ++i) expected[i] = 2.0;
  EXPECT_TENSOR_NEAR((*values)[2], Tensor::FromVector<double>(expected, TensorShape({16, 4})));
}

TEST(ArrayGradTest, Tile) {
  struct Case {
    TensorShape shape;
    std::vector<int32_t> multiples;
  };
  const Case cases[] = {
      {{2, 3}, {2, 1}}, {{2, 3}, {1, 3}}, {{2, 3}, {2, 2}}, {{2, 1, 2}, {1, 3, 2}}, {{3}, {1}}};
  for (const Case& c : cases) {
    CheckWithIndexInputs(
        c.shape, kKnownRank, 12,
        [&](const Scope& root, const Output& x, const IndexMaker& index) {
          return ops::Tile(root, x, index(c.multiples));
        },
        StrCat("multiples [", StrJoin(c.multiples, ","), "]"));
  }
}

TEST(ArrayGradTest, BroadcastTo) {
  struct Case {
    TensorShape shape;
    std::vector<int32_t> target;
  };
  const Case cases[] = {{{3}, {2, 3}}, {{2, 1}, {2, 3}}, {{1}, {2, 2, 2}},
                        {{}, {2, 2}},  {{2, 3}, {2, 3}}, {{1, 3}, {2, 1, 3}}};
  for (const Case& c : cases) {
    CheckWithIndexInputs(
        c.shape, kAnyKnowledge, 13,
        [&](const Scope& root, const Output& x, const IndexMaker& index) {
          return ops::BroadcastTo(root, x, index(c.target));
        },
        StrCat("to [", StrJoin(c.target, ","), "]"));
  }
}

TEST(ArrayGradTest, Fill) {
  for (bool fed : {false, true}) {
    Scope root = Scope::NewRootScope();
    GradientCheckOptions options;
    Output value = Float64Placeholder(root.WithOpName("value"), TensorShape({}));
    Output y = ops::Fill(root, IndexInput(root, Ints({2, 3}), fed, &options), value);
    EXPECT_TRUE(
        GradientNear(root, {value}, {RandomTensor({}, -1, 1, 14)}, y, kGradientTolerance, options))
        << "fed " << fed;
  }
}

// Bands of batches of square and non-square matrices, with the counts constant or fed (int32 and
// int64) and the shape known or not: the gradient is the same band of the incoming gradient.
TEST(ArrayGradTest, MatrixBandPart) {
  struct Bands {
    int64_t lower, upper;
  };
  for (const TensorShape& shape :
       {TensorShape({3, 4}), TensorShape({2, 4, 3}), TensorShape({2, 1, 3, 3})}) {
    for (Bands bands : {Bands{0, -1}, Bands{-1, 0}, Bands{0, 0}, Bands{1, 2}, Bands{-4, 1}}) {
      for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
        for (bool fed : {false, true}) {
          Scope root = Scope::NewRootScope();
          GradientCheckOptions options;
          Output x = Float64Placeholder(root.WithOpName("x"), shape, knowledge);
          const DataType index_type = fed ? DataType::kInt32 : DataType::kInt64;
          auto count = [&](int64_t value) {
            Tensor t = index_type == DataType::kInt64
                           ? Tensor::Scalar<int64_t>(value)
                           : Tensor::Scalar<int32_t>(static_cast<int32_t>(value));
            return IndexInput(root, t, fed, &options);
          };
          Output y = ops::MatrixBandPart(root, x, count(bands.lower), count(bands.upper));
          EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor(shape, -1, 1, 30)}, y,
                                   kGradientTolerance, options))
              << shape << " bands " << bands.lower << ", " << bands.upper << " knowledge "
              << static_cast<int>(knowledge) << " fed " << fed;
        }
      }
    }
  }
}

TEST(ArrayGradTest, StopGradientBlocks) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({2}));
  std::vector<Output> grads;
  ASSERT_TRUE(
      AddSymbolicGradients(root, {ops::Mul(root, x, ops::StopGradient(root, x))}, {x}, &grads)
          .ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{x.name(), Tensor::FromVector<double>({3, -2})}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({3, -2}));  // x, not 2x
}

TEST(ArrayGradTest, SourcesAndStateOpsBlockGradients) {
  for (const char* op :
       {"Const", "Placeholder", "StopGradient", "NoOp", "Shape", "_Arg", "_Retval", "VarHandleOp",
        "ReadVariableOp", "RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    StatusOr<const GradFunc*> fn = AllGradients().Lookup(op);
    ASSERT_TRUE(fn.ok()) << op << ": " << fn.status();
    EXPECT_FALSE(**fn) << op;
  }
}

TEST(ArrayGradTest, EveryArrayOpWithAGradientIsRegistered) {
  for (const char* op : {"Identity", "Reshape", "ExpandDims", "Squeeze", "Transpose", "ConcatV2",
                         "Slice", "Tile", "BroadcastTo", "Fill", "MatrixBandPart"}) {
    StatusOr<const GradFunc*> fn = AllGradients().Lookup(op);
    ASSERT_TRUE(fn.ok()) << op << ": " << fn.status();
    EXPECT_TRUE(**fn) << op;
  }
}

}  // namespace
}  // namespace weft
