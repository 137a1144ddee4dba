// Numeric checks of the math gradients in float64: broadcasting binary ops and SelectV2 (shapes
// known, rank only, unknown), unary functions (Erf included), AddN, every MatMul transpose
// combination, every BatchMatMulV2 adjoint combination with and without broadcast batch dims,
// Sum/Mean/Max over several axes with and without keep_dims (constant and fed axes), Max ties,
// Cast, and the ops that block gradients.
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

using BinaryOp = Output (*)(const Scope&, const Input&, const Input&);
using UnaryOp = Output (*)(const Scope&, const Input&);

struct ShapePair {
  TensorShape x, y;
};

const std::vector<ShapePair>& BroadcastCases() {
  static const auto* cases =
      new std::vector<ShapePair>{{{2, 3}, {2, 3}},    {{2, 3}, {3}},    {{3}, {2, 3}},
                                 {{2, 1}, {1, 3}},    {{}, {2, 3}},     {{2, 3}, {}},
                                 {{2, 1, 3}, {4, 1}}, {{2, 3}, {1, 1}}, {{1}, {1}},
                                 {{2, 0, 3}, {1, 3}}, {{}, {}}};
  return *cases;
}

// Checks op(x, y) for every broadcasting case and every shape knowledge; values in [lo, hi).
void CheckBinary(const char* name, BinaryOp op, double lo, double hi) {
  for (const ShapePair& shapes : BroadcastCases()) {
    for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
      Scope root = Scope::NewRootScope();
      Output x = Float64Placeholder(root.WithOpName("x"), shapes.x, knowledge);
      Output y = Float64Placeholder(root.WithOpName("y"), shapes.y, knowledge);
      Output z = op(root, x, y);
      EXPECT_TRUE(GradientNear(
          root, {x, y}, {RandomTensor(shapes.x, lo, hi, 1), RandomTensor(shapes.y, lo, hi, 2)}, z,
          kGradientTolerance))
          << name << " " << shapes.x << " and " << shapes.y << ", knowledge "
          << static_cast<int>(knowledge);
    }
  }
}

TEST(MathGradTest, Add) { CheckBinary("Add", ops::Add, -1, 1); }
TEST(MathGradTest, Sub) { CheckBinary("Sub", ops::Sub, -1, 1); }
TEST(MathGradTest, Mul) { CheckBinary("Mul", ops::Mul, -1, 1); }
TEST(MathGradTest, Div) { CheckBinary("Div", ops::Div, 0.5, 2); }
TEST(MathGradTest, Maximum) { CheckBinary("Maximum", ops::Maximum, -1, 1); }

TEST(MathGradTest, Minimum) { CheckBinary("Minimum", ops::Minimum, -1, 1); }

// Ties go to x for Minimum as for Maximum.
TEST(MathGradTest, MinimumGivesTiesToX) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({3}));
  Output y = ops::Placeholder(root, DataType::kDouble, PartialShape({3}));
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {ops::Minimum(root, x, y)}, {x, y}, &grads).ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root,
               {{x.name(), Tensor::FromVector<double>({1, 2, 3})},
                {y.name(), Tensor::FromVector<double>({0, 2, 4})}},
               grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({0, 1, 1}));
  EXPECT_TENSOR_NEAR((*values)[1], Tensor::FromVector<double>({1, 0, 0}));
}

// select(c, t, e) with c a Const of `c` (seeded) for every three-way broadcast below.
TEST(MathGradTest, SelectV2) {
  struct Case {
    TensorShape c, t, e;
  };
  const Case cases[] = {{{2, 3}, {2, 3}, {2, 3}}, {{2, 1}, {3}, {}},        {{}, {2, 3}, {2, 3}},
                        {{2, 3}, {1}, {2, 1}},    {{3}, {2, 1, 3}, {1, 3}}, {{2, 0}, {1}, {2, 1}}};
  for (const Case& c : cases) {
    for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
      Scope root = Scope::NewRootScope();
      Tensor condition(DataType::kBool, c.c);
      Tensor coin = RandomTensor(c.c, -1, 1, 20);
      for (int64_t i = 0; i < condition.NumElements(); ++i) {
        condition.data<bool>()[i] = coin.data<double>()[i] > 0;
      }
      Output t = Float64Placeholder(root.WithOpName("t"), c.t, knowledge);
      Output e = Float64Placeholder(root.WithOpName("e"), c.e, knowledge);
      Output y = ops::SelectV2(root, ops::Const(root, condition), t, e);
      EXPECT_TRUE(GradientNear(root, {t, e},
                               {RandomTensor(c.t, -1, 1, 21), RandomTensor(c.e, -1, 1, 22)}, y,
                               kGradientTolerance))
          << c.c << " " << c.t << " " << c.e << " knowledge " << static_cast<int>(knowledge);
    }
  }
}

TEST(MathGradTest, MaximumGivesTiesToX) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({3}));
  Output y = ops::Placeholder(root, DataType::kDouble, PartialShape({3}));
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {ops::Maximum(root, x, y)}, {x, y}, &grads).ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root,
               {{x.name(), Tensor::FromVector<double>({1, 2, 3})},
                {y.name(), Tensor::FromVector<double>({0, 2, 4})}},
               grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({1, 1, 0}));
  EXPECT_TENSOR_NEAR((*values)[1], Tensor::FromVector<double>({0, 0, 1}));
}

void CheckUnary(const char* name, UnaryOp op, double lo, double hi) {
  for (const TensorShape& shape : {TensorShape({2, 3}), TensorShape({}), TensorShape({0})}) {
    Scope root = Scope::NewRootScope();
    Output x = Float64Placeholder(root.WithOpName("x"), shape);
    EXPECT_TRUE(
        GradientNear(root, {x}, {RandomTensor(shape, lo, hi, 3)}, op(root, x), kGradientTolerance))
        << name << " " << shape;
  }
}

TEST(MathGradTest, Neg) { CheckUnary("Neg", ops::Neg, -1, 1); }
TEST(MathGradTest, Square) { CheckUnary("Square", ops::Square, -2, 2); }
TEST(MathGradTest, Sqrt) { CheckUnary("Sqrt", ops::Sqrt, 0.5, 2); }
TEST(MathGradTest, Exp) { CheckUnary("Exp", ops::Exp, -2, 2); }
TEST(MathGradTest, Log) { CheckUnary("Log", ops::Log, 0.5, 2); }
TEST(MathGradTest, Reciprocal) { CheckUnary("Reciprocal", ops::Reciprocal, 0.5, 2); }
// Random values are never within the step of Abs's kink at 0; Sign's gradient is zero.
TEST(MathGradTest, Abs) { CheckUnary("Abs", ops::Abs, -2, 2); }
TEST(MathGradTest, Sign) { CheckUnary("Sign", ops::Sign, -2, 2); }
TEST(MathGradTest, Rsqrt) { CheckUnary("Rsqrt", ops::Rsqrt, 0.5, 2); }
TEST(MathGradTest, Log1p) { CheckUnary("Log1p", ops::Log1p, -0.5, 2); }
TEST(MathGradTest, Erf) { CheckUnary("Erf", ops::Erf, -2, 2); }

TEST(MathGradTest, AddN) {
  Scope root = Scope::NewRootScope();
  TensorShape shape({2, 3});
  Output a = Float64Placeholder(root.WithOpName("a"), shape);
  Output b = Float64Placeholder(root.WithOpName("b"), shape, ShapeKnowledge::kNone);
  Output c = Float64Placeholder(root.WithOpName("c"), shape);
  Output sum = ops::AddN(root, {a, b, c, a});  // a counted twice
  EXPECT_TRUE(GradientNear(
      root, {a, b, c},
      {RandomTensor(shape, -1, 1, 4), RandomTensor(shape, -1, 1, 5), RandomTensor(shape, -1, 1, 6)},
      sum, kGradientTolerance));
}

TEST(MathGradTest, MatMulEveryTransposeCombination) {
  for (bool transpose_a : {false, true}) {
    for (bool transpose_b : {false, true}) {
      for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
        // [3, 4] x [4, 2], with each operand stored transposed when asked.
        TensorShape a_shape = transpose_a ? TensorShape({4, 3}) : TensorShape({3, 4});
        TensorShape b_shape = transpose_b ? TensorShape({2, 4}) : TensorShape({4, 2});
        Scope root = Scope::NewRootScope();
        Output a = Float64Placeholder(root.WithOpName("a"), a_shape, knowledge);
        Output b = Float64Placeholder(root.WithOpName("b"), b_shape, knowledge);
        Output product = ops::MatMul(root, a, b, {transpose_a, transpose_b});
        EXPECT_TRUE(GradientNear(root, {a, b},
                                 {RandomTensor(a_shape, -1, 1, 7), RandomTensor(b_shape, -1, 1, 8)},
                                 product, kGradientTolerance))
            << "transpose_a " << transpose_a << " transpose_b " << transpose_b;
      }
    }
  }
}

// Each operand stored as BatchMatMulV2 reads it: [batch..., rows, cols], or [batch..., cols, rows]
// when adjoint.
TensorShape StoredMatrices(std::vector<int64_t> batch, int64_t rows, int64_t cols, bool adjoint) {
  batch.push_back(adjoint ? cols : rows);
  batch.push_back(adjoint ? rows : cols);
  return TensorShape(batch);
}

// [3,4] x [4,2] products under batch dims that match, broadcast on one or both sides, or differ
// in rank; the gradients of broadcast operands are summed back to their shapes.
TEST(MathGradTest, BatchMatMulEveryAdjointCombinationAndBroadcast) {
  struct Batches {
    std::vector<int64_t> x, y;
  };
  for (const Batches& batches : {Batches{{}, {}}, Batches{{2}, {2}}, Batches{{2, 1}, {3}},
                                 Batches{{}, {2}}, Batches{{1, 2}, {3, 1}}}) {
    for (bool adj_x : {false, true}) {
      for (bool adj_y : {false, true}) {
        for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
          const TensorShape x_shape = StoredMatrices(batches.x, 3, 4, adj_x);
          const TensorShape y_shape = StoredMatrices(batches.y, 4, 2, adj_y);
          Scope root = Scope::NewRootScope();
          Output x = Float64Placeholder(root.WithOpName("x"), x_shape, knowledge);
          Output y = Float64Placeholder(root.WithOpName("y"), y_shape, knowledge);
          Output product = ops::BatchMatMul(root, x, y, {.adj_x = adj_x, .adj_y = adj_y});
          EXPECT_TRUE(GradientNear(
              root, {x, y}, {RandomTensor(x_shape, -1, 1, 14), RandomTensor(y_shape, -1, 1, 15)},
              product, kGradientTolerance))
              << x_shape << " x " << y_shape << " adj_x " << adj_x << " adj_y " << adj_y
              << " knowledge " << static_cast<int>(knowledge);
        }
      }
    }
  }
}

using ReductionOp = Output (*)(const Scope&, const Input&, const Input&,
                               const ops::ReductionAttrs&);

const std::vector<std::vector<int>>& AxesCases() {
  static const auto* cases = new std::vector<std::vector<int>>{
      {0}, {1}, {2}, {-1}, {0, 2}, {-3, 1}, {}, {0, 1, 2}, {1, -2}};
  return *cases;
}

// Checks a reduction of a [2, 3, 4] input over each set of axes, with and without keep_dims,
// for a known and a rank-only input shape, with constant axes and with axes fed at run time.
void CheckReduction(const char* name, ReductionOp op) {
  const TensorShape shape({2, 3, 4});
  for (const std::vector<int>& axes : AxesCases()) {
    for (bool keep_dims : {false, true}) {
      for (ShapeKnowledge knowledge : {ShapeKnowledge::kFull, ShapeKnowledge::kRankOnly}) {
        for (bool fed_axes : {false, true}) {
          Scope root = Scope::NewRootScope();
          Output x = Float64Placeholder(root.WithOpName("x"), shape, knowledge);
          Tensor axes_value =
              Tensor::FromVector<int32_t>(std::vector<int32_t>(axes.begin(), axes.end()));
          GradientCheckOptions options;
          Output axes_input;
          if (fed_axes) {
            axes_input = ops::Placeholder(root.WithOpName("axes"), DataType::kInt32);
            options.extra_feeds.emplace_back(axes_input.name(), axes_value);
          } else {
            axes_input = ops::Const(root, axes_value);
          }
          Output y = op(root, x, axes_input, {keep_dims});
          EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor(shape, -1, 1, 9)}, y,
                                   kGradientTolerance, options))
              << name << " axes [" << StrJoin(axes, ",") << "] keep_dims " << keep_dims
              << " knowledge " << static_cast<int>(knowledge) << " fed_axes " << fed_axes;
        }
      }
    }
  }
}

TEST(MathGradTest, Sum) { CheckReduction("Sum", ops::Sum); }
TEST(MathGradTest, Mean) { CheckReduction("Mean", ops::Mean); }
TEST(MathGradTest, Max) { CheckReduction("Max", ops::Max); }

TEST(MathGradTest, ReductionOverScalarAxisAndInt64Axes) {
  for (ReductionOp op : {ReductionOp(ops::Sum), ReductionOp(ops::Mean), ReductionOp(ops::Max)}) {
    Scope root = Scope::NewRootScope();
    const TensorShape shape({3, 4});
    Output x = Float64Placeholder(root.WithOpName("x"), shape, ShapeKnowledge::kRankOnly);
    Output y =
        ops::Add(root, op(root, x, 1, {}), op(root, x, Tensor::FromVector<int64_t>({0, 1}), {}));
    EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor(shape, -1, 1, 10)}, y, kGradientTolerance));
  }
}

TEST(MathGradTest, MaxSplitsTheGradientAmongTies) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({2, 3}));
  Output row_max = ops::Max(root, x, 1);
  Output all_max = ops::Max(root, x, {0, 1});
  std::vector<Output> row_grads, all_grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {row_max}, {x}, &row_grads).ok());
  ASSERT_TRUE(AddSymbolicGradients(root, {all_max}, {x}, &all_grads).ok());
  StatusOr<std::vector<Tensor>> values = RunGraph(
      root, {{x.name(), Tensor::FromVector<double>({1, 3, 3, 2, 2, 0}, TensorShape({2, 3}))}},
      {row_grads[0], all_grads[0]});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0],
                     Tensor::FromVector<double>({0, 0.5, 0.5, 0.5, 0.5, 0}, TensorShape({2, 3})));
  EXPECT_TENSOR_NEAR((*values)[1],
                     Tensor::FromVector<double>({0, 0.5, 0.5, 0, 0, 0}, TensorShape({2, 3})));
}

TEST(MathGradTest, ReductionOfUnknownRankWithoutKeepDimsIsUnimplemented) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kDouble);
  Output y = ops::Sum(root, x, 0);
  std::vector<Output> grads;
  Status status = AddSymbolicGradients(root, {y}, {x}, &grads);
  EXPECT_TRUE(IsUnimplemented(status)) << status;
  EXPECT_NE(status.message().find("rank"), std::string::npos) << status;
}

TEST(MathGradTest, ReductionOfUnknownRankWithKeepDims) {
  Scope root = Scope::NewRootScope();
  const TensorShape shape({2, 3});
  Output x = Float64Placeholder(root.WithOpName("x"), shape, ShapeKnowledge::kNone);
  Output y = ops::Add(root, ops::Sum(root, x, 0, {.keep_dims = true}),
                      ops::Max(root, x, 1, {.keep_dims = true}));
  EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor(shape, -1, 1, 11)}, y, kGradientTolerance));
}

TEST(MathGradTest, CastBetweenFloatTypes) {
  const TensorShape shape({2, 3});
  {
    Scope root = Scope::NewRootScope();
    Output x = Float64Placeholder(root.WithOpName("x"), shape);
    Output y = ops::Cast(root, ops::Mul(root, x, x), DataType::kDouble);
    EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor(shape, -1, 1, 12)}, y, kGradientTolerance));
  }
  {
    // Through float32: the numeric estimate needs a step float32 can resolve.
    Scope root = Scope::NewRootScope();
    Output x = Float64Placeholder(root.WithOpName("x"), shape);
    Output narrow = ops::Mul(root, ops::Cast(root, x, DataType::kFloat), 3.0f);
    Output y = ops::Cast(root, narrow, DataType::kDouble);
    GradientCheckOptions options;
    options.delta = 1e-2;
    EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor(shape, -1, 1, 13)}, y, 1e-3, options));
  }
}

TEST(MathGradTest, CastThroughIntegersGivesNoGradient) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({2}));
  Output rounded = ops::Cast(root, ops::Cast(root, x, DataType::kInt32), DataType::kDouble);
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {ops::Add(root, rounded, x)}, {x}, &grads).ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{x.name(), Tensor::FromVector<double>({1.5, -2.5})}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({1, 1}));
}

// Mixed precision's casts: float32 -> bfloat16 -> float32 passes the gradient through unchanged,
// cast to bfloat16 and back on its way.
TEST(MathGradTest, CastThroughBFloat16CastsTheGradientBack) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, PartialShape({3}));
  Output y = ops::Cast(root, ops::Cast(root, x, DataType::kBFloat16), DataType::kFloat);
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {ops::Mul(root, y, 3.0f)}, {x}, &grads).ok());
  ASSERT_EQ(grads[0].dtype(), DataType::kFloat);
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{x.name(), Tensor::FromVector<float>({0.1f, -2, 3})}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_EQ((*values)[0], Tensor::FromVector<float>({3, 3, 3}));
}

TEST(MathGradTest, ComparisonIndexAndMetadataOpsBlockGradients) {
  for (const char* op :
       {"Equal", "Less", "LessEqual", "Greater", "GreaterEqual", "ArgMax", "BroadcastGradientArgs",
        "Shape", "Size", "Rank", "ZerosLike", "OnesLike"}) {
    StatusOr<const GradFunc*> fn = AllGradients().Lookup(op);
    ASSERT_TRUE(fn.ok()) << op << ": " << fn.status();
    EXPECT_FALSE(**fn) << op;
  }
  // x * (x == c) and x + zeros_like(x): the mask and the zeros pass nothing back.
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({3}));
  Output mask = ops::Cast(root, ops::Equal(root, x, 2.0), DataType::kDouble);
  Output y = ops::Add(root, ops::Mul(root, x, mask), ops::ZerosLike(root, x));
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x}, &grads).ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{x.name(), Tensor::FromVector<double>({1, 2, 3})}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({0, 1, 0}));
}

// relu(x) spelled select(x > 0, x, 0) and a mask from x <= 1: the comparisons pass nothing back,
// the select passes dz where the condition holds.
TEST(MathGradTest, OrderingsBlockGradientsThroughTheirOutputs) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({4}));
  Output relu = ops::SelectV2(root, ops::Greater(root, x, 0.0), x, 0.0);
  Output mask = ops::Cast(root, ops::LessEqual(root, x, 1.0), DataType::kDouble);
  Output y = ops::Mul(root, relu, mask);
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {y}, {x}, &grads).ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{x.name(), Tensor::FromVector<double>({-1, 0.5, 2, 1})}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({0, 1, 0, 1}));
}

TEST(MathGradTest, EveryMathOpWithAGradientIsRegistered) {
  for (const char* op :
       {"Add", "Sub",        "Mul",  "Div",   "Maximum", "Minimum", "SelectV2",
        "Neg", "Square",     "Sqrt", "Rsqrt", "Exp",     "Log",     "Log1p",
        "Erf", "Reciprocal", "Abs",  "Sign",  "AddN",    "MatMul",  "BatchMatMulV2",
        "Sum", "Mean",       "Max",  "Cast"}) {
    StatusOr<const GradFunc*> fn = AllGradients().Lookup(op);
    ASSERT_TRUE(fn.ok()) << op << ": " << fn.status();
    EXPECT_TRUE(**fn) << op;
  }
}

}  // namespace
}  // namespace weft
