// Numeric checks of the neural-network gradients in float64: BiasAdd, the activations (Relu away
// from its kink, Softplus, Gelu in both modes), Softmax and LogSoftmax (rank 3 under every shape
// knowledge), sparse softmax cross-entropy, Conv2D (SAME/VALID, stride 1/2), MaxPool and AvgPool
// (SAME/VALID, overlapping windows), FusedAttention (masked and not, also against the gradients of
// the plain composition in float64 and float32), FusedLayerNorm (x, scale and offset).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/graph/gradients/gradients.h"
#include "weft/testing/gradient_checker.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
namespace {

using testing::Float64Placeholder;
using testing::GradientNear;
using testing::kAllShapeKnowledges;
using testing::kGradientTolerance;
using testing::RandomTensor;
using testing::RunGraph;
using testing::ShapeKnowledge;

TEST(NnGradTest, BiasAdd) {
  for (const TensorShape& shape : {TensorShape({2, 3}), TensorShape({1, 2, 2, 3})}) {
    for (ShapeKnowledge knowledge : {ShapeKnowledge::kFull, ShapeKnowledge::kNone}) {
      Scope root = Scope::NewRootScope();
      Output value = Float64Placeholder(root.WithOpName("value"), shape, knowledge);
      Output bias = Float64Placeholder(root.WithOpName("bias"), TensorShape({3}), knowledge);
      EXPECT_TRUE(GradientNear(root, {value, bias},
                               {RandomTensor(shape, -1, 1, 1), RandomTensor({3}, -1, 1, 2)},
                               ops::BiasAdd(root, value, bias), kGradientTolerance))
          << shape;
    }
  }
}

// Values in [0.1, 1) with random signs: away from Relu's kink at 0.
Tensor AwayFromZero(const TensorShape& shape, uint64_t seed) {
  Tensor t = RandomTensor(shape, 0.1, 1, seed);
  Tensor signs = RandomTensor(shape, -1, 1, seed + 1);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (signs.flat<double>()[i] < 0) t.flat<double>()[i] *= -1;
  }
  return t;
}

TEST(NnGradTest, Relu) {
  Scope root = Scope::NewRootScope();
  const TensorShape shape({3, 4});
  Output x = Float64Placeholder(root.WithOpName("x"), shape);
  EXPECT_TRUE(
      GradientNear(root, {x}, {AwayFromZero(shape, 3)}, ops::Relu(root, x), kGradientTolerance));
}

TEST(NnGradTest, ReluPassesNothingWhereTheInputIsNegative) {
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({3}));
  std::vector<Output> grads;
  ASSERT_TRUE(AddSymbolicGradients(root, {ops::Relu(root, x)}, {x}, &grads).ok());
  StatusOr<std::vector<Tensor>> values =
      RunGraph(root, {{x.name(), Tensor::FromVector<double>({-1, 2, -3})}}, grads);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_TENSOR_NEAR((*values)[0], Tensor::FromVector<double>({0, 1, 0}));
}

using UnaryOp = Output (*)(const Scope&, const Input&);

void CheckUnary(const char* name, UnaryOp op, const TensorShape& shape) {
  Scope root = Scope::NewRootScope();
  Output x = Float64Placeholder(root.WithOpName("x"), shape);
  EXPECT_TRUE(
      GradientNear(root, {x}, {RandomTensor(shape, -2, 2, 4)}, op(root, x), kGradientTolerance))
      << name << " " << shape;
}

TEST(NnGradTest, SigmoidAndTanh) {
  for (const TensorShape& shape : {TensorShape({2, 3}), TensorShape({})}) {
    CheckUnary("Sigmoid", ops::Sigmoid, shape);
    CheckUnary("Tanh", ops::Tanh, shape);
    CheckUnary("Softplus", ops::Softplus, shape);
  }
}

TEST(NnGradTest, SoftmaxAndLogSoftmax) {
  for (const TensorShape& shape : {TensorShape({2, 4}), TensorShape({5}), TensorShape({2, 2, 3})}) {
    CheckUnary("Softmax", ops::Softmax, shape);
    CheckUnary("LogSoftmax", ops::LogSoftmax, shape);
  }
}

// [batch, time, classes] as attention scores are, with the shape known, known in rank only, or
// unknown: the gradients reduce over the last axis whatever the graph knows.
TEST(NnGradTest, SoftmaxAndLogSoftmaxOfRankThreeUnderEveryShapeKnowledge) {
  const TensorShape shape({2, 3, 4});
  for (ShapeKnowledge knowledge : kAllShapeKnowledges) {
    for (UnaryOp op : {UnaryOp{ops::Softmax}, UnaryOp{ops::LogSoftmax}}) {
      Scope root = Scope::NewRootScope();
      Output x = Float64Placeholder(root.WithOpName("x"), shape, knowledge);
      EXPECT_TRUE(GradientNear(root, {x}, {RandomTensor(shape, -3, 3, 10)}, op(root, x),
                               kGradientTolerance))
          << (op == UnaryOp{ops::Softmax} ? "Softmax" : "LogSoftmax") << " knowledge "
          << static_cast<int>(knowledge);
    }
  }
}

// Both forms, over the kinkless range where gelu bends most, on several ranks and with the shape
// known or not.
TEST(NnGradTest, GeluExactAndApproximate) {
  for (bool approximate : {false, true}) {
    for (const TensorShape& shape :
         {TensorShape({}), TensorShape({2, 3}), TensorShape({2, 2, 3})}) {
      for (ShapeKnowledge knowledge : {ShapeKnowledge::kFull, ShapeKnowledge::kNone}) {
        Scope root = Scope::NewRootScope();
        Output x = Float64Placeholder(root.WithOpName("x"), shape, knowledge);
        Output y = ops::Gelu(root, x, {.approximate = approximate});
        EXPECT_TRUE(
            GradientNear(root, {x}, {RandomTensor(shape, -3, 3, 11)}, y, kGradientTolerance))
            << "approximate " << approximate << " " << shape << " knowledge "
            << static_cast<int>(knowledge);
      }
    }
  }
}

// The gradient keeps the forward op's mode: the two slopes differ by up to ~9e-4 (near x = -2),
// far above the tolerance here.
TEST(NnGradTest, GeluGradKeepsTheMode) {
  for (bool approximate : {false, true}) {
    Scope root = Scope::NewRootScope();
    Output x = ops::Placeholder(root, DataType::kDouble, PartialShape({2}));
    std::vector<Output> grads;
    ASSERT_TRUE(
        AddSymbolicGradients(root, {ops::Gelu(root, x, {.approximate = approximate})}, {x}, &grads)
            .ok());
    StatusOr<std::vector<Tensor>> values =
        RunGraph(root, {{x.name(), Tensor::FromVector<double>({-3, 2.5})}}, grads);
    ASSERT_TRUE(values.ok()) << values.status();
    // Phi(x) + x phi(x), or the tanh form's slope, at -3 and 2.5.
    EXPECT_TENSOR_NEAR((*values)[0],
                       approximate
                           ? Tensor::FromVector<double>({-0.011584166630969516, 1.037951576212666})
                           : Tensor::FromVector<double>({-0.01194564720418392, 1.037611085908145}),
                       1e-12, 1e-12);
  }
}

TEST(NnGradTest, SparseSoftmaxCrossEntropyWithLogits) {
  for (DataType label_type : {DataType::kInt64, DataType::kInt32}) {
    Scope root = Scope::NewRootScope();
    const TensorShape shape({3, 4});
    Output features = Float64Placeholder(root.WithOpName("features"), shape);
    Tensor labels = label_type == DataType::kInt64 ? Tensor::FromVector<int64_t>({0, 3, 1})
                                                   : Tensor::FromVector<int32_t>({0, 3, 1});
    Output loss =
        ops::SparseSoftmaxCrossEntropyWithLogits(root, features, ops::Const(root, labels)).loss;
    EXPECT_TRUE(
        GradientNear(root, {features}, {RandomTensor(shape, -2, 2, 5)}, loss, kGradientTolerance))
        << DataTypeName(label_type);
  }
}

TEST(NnGradTest, SparseSoftmaxCrossEntropyBackpropOutputIsUnimplemented) {
  Scope root = Scope::NewRootScope();
  Output features = ops::Placeholder(root, DataType::kDouble, PartialShape({2, 3}));
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(root, features, {1, 2});
  std::vector<Output> grads;
  Status status =
      AddSymbolicGradients(root, {ops::Sum(root, xent.backprop, {0, 1})}, {features}, &grads);
  EXPECT_TRUE(IsUnimplemented(status)) << status;
  EXPECT_NE(status.message().find("SparseSoftmaxCrossEntropyWithLogits"), std::string::npos)
      << status;
}

struct WindowCase {
  TensorShape input;
  TensorShape window;  // conv: the filter; pool: [1, kh, kw, 1]
  int64_t stride;
  const char* padding;
};

TEST(NnGradTest, Conv2D) {
  const WindowCase cases[] = {
      {{1, 5, 5, 2}, {3, 3, 2, 2}, 1, "SAME"}, {{1, 5, 5, 2}, {3, 3, 2, 2}, 1, "VALID"},
      {{2, 5, 5, 1}, {3, 3, 1, 2}, 2, "SAME"}, {{2, 5, 5, 1}, {3, 3, 1, 2}, 2, "VALID"},
      {{1, 6, 4, 1}, {2, 2, 1, 2}, 2, "SAME"}, {{1, 4, 6, 2}, {2, 3, 2, 1}, 1, "SAME"},
  };
  for (const WindowCase& c : cases) {
    for (ShapeKnowledge knowledge : {ShapeKnowledge::kFull, ShapeKnowledge::kRankOnly}) {
      Scope root = Scope::NewRootScope();
      Output input = Float64Placeholder(root.WithOpName("input"), c.input, knowledge);
      Output filter = Float64Placeholder(root.WithOpName("filter"), c.window, knowledge);
      Output y = ops::Conv2D(root, input, filter, {1, c.stride, c.stride, 1}, c.padding);
      EXPECT_TRUE(GradientNear(root, {input, filter},
                               {RandomTensor(c.input, -1, 1, 6), RandomTensor(c.window, -1, 1, 7)},
                               y, kGradientTolerance))
          << c.input << " * " << c.window << " stride " << c.stride << " " << c.padding;
    }
  }
}

TEST(NnGradTest, MaxPool) {
  const WindowCase cases[] = {
      {{1, 4, 4, 2}, {1, 2, 2, 1}, 2, "VALID"}, {{1, 4, 4, 2}, {1, 2, 2, 1}, 2, "SAME"},
      {{2, 5, 5, 1}, {1, 3, 3, 1}, 2, "SAME"},  {{2, 5, 5, 1}, {1, 3, 3, 1}, 2, "VALID"},
      {{1, 4, 5, 2}, {1, 2, 2, 1}, 1, "VALID"},  // overlapping windows
      {{1, 3, 3, 1}, {1, 2, 2, 1}, 1, "SAME"},
  };
  for (const WindowCase& c : cases) {
    Scope root = Scope::NewRootScope();
    Output input = Float64Placeholder(root.WithOpName("input"), c.input);
    std::vector<int64_t> ksize = c.window.dim_sizes();
    Output y = ops::MaxPool(root, input, ksize, {1, c.stride, c.stride, 1}, c.padding);
    // Continuous random values: no ties within a window, where MaxPool has no derivative.
    EXPECT_TRUE(
        GradientNear(root, {input}, {RandomTensor(c.input, -1, 1, 8)}, y, kGradientTolerance))
        << c.input << " window " << c.window << " stride " << c.stride << " " << c.padding;
  }
}

TEST(NnGradTest, AvgPool) {
  const WindowCase cases[] = {
      {{1, 4, 4, 2}, {1, 2, 2, 1}, 2, "VALID"}, {{1, 4, 4, 2}, {1, 2, 2, 1}, 2, "SAME"},
      {{2, 5, 5, 1}, {1, 3, 3, 1}, 2, "SAME"},  {{2, 5, 5, 1}, {1, 3, 3, 1}, 2, "VALID"},
      {{1, 4, 5, 2}, {1, 2, 2, 1}, 1, "VALID"},  // overlapping windows
      {{1, 3, 3, 1}, {1, 2, 2, 1}, 1, "SAME"},  {{1, 3, 4, 1}, {1, 3, 2, 1}, 3, "SAME"},
  };
  for (const WindowCase& c : cases) {
    // Known shapes pass the input shape as a Const, rank-only ones through a Shape node.
    for (ShapeKnowledge knowledge : {ShapeKnowledge::kFull, ShapeKnowledge::kRankOnly}) {
      Scope root = Scope::NewRootScope();
      Output input = Float64Placeholder(root.WithOpName("input"), c.input, knowledge);
      std::vector<int64_t> ksize = c.window.dim_sizes();
      Output y = ops::AvgPool(root, input, ksize, {1, c.stride, c.stride, 1}, c.padding);
      EXPECT_TRUE(
          GradientNear(root, {input}, {RandomTensor(c.input, -1, 1, 9)}, y, kGradientTolerance))
          << c.input << " window " << c.window << " stride " << c.stride << " " << c.padding;
    }
  }
}

// Attention shapes for the FusedAttention checks: [B, H, T, D] with Tq < Tk.
constexpr int64_t kB = 2, kH = 2, kTq = 3, kTk = 5, kD = 4, kDv = 3;

TEST(NnGradTest, FusedAttention) {
  const TensorShape q_shape({kB, kH, kTq, kD}), k_shape({kB, kH, kTk, kD});
  const TensorShape v_shape({kB, kH, kTk, kDv});
  for (const std::vector<int32_t>& lengths : {std::vector<int32_t>{5, 5}, {5, 2}, {0, 3}}) {
    for (bool causal : {false, true}) {
      for (ShapeKnowledge knowledge : {ShapeKnowledge::kFull, ShapeKnowledge::kNone}) {
        Scope root = Scope::NewRootScope();
        Output q = Float64Placeholder(root.WithOpName("q"), q_shape, knowledge);
        Output k = Float64Placeholder(root.WithOpName("k"), k_shape, knowledge);
        Output v = Float64Placeholder(root.WithOpName("v"), v_shape, knowledge);
        Output y = ops::FusedAttention(root, q, k, v, Tensor::FromVector<int32_t>(lengths),
                                       {.causal = causal, .scale = 0.7f})
                       .output;
        EXPECT_TRUE(GradientNear(root, {q, k, v},
                                 {RandomTensor(q_shape, -2, 2, 1), RandomTensor(k_shape, -2, 2, 2),
                                  RandomTensor(v_shape, -1, 1, 3)},
                                 y, kGradientTolerance))
            << "lengths " << lengths[0] << "," << lengths[1] << " causal " << causal
            << " knowledge " << static_cast<int>(knowledge);
      }
    }
  }
}

// A gradient arriving at logsumexp is refused by name; none arriving at output passes none back.
TEST(NnGradTest, FusedAttentionLogSumExpTakesNoGradient) {
  Scope root = Scope::NewRootScope();
  Output q = ops::Placeholder(root, DataType::kDouble, PartialShape({1, 1, 2, 2}));
  Output lengths = ops::Const(root, Tensor::FromVector<int32_t>({2}));
  ops::FusedAttentionOutputs attention = ops::FusedAttention(root, q, q, q, lengths);
  std::vector<Output> grads;
  const Status status = AddSymbolicGradients(root, {attention.logsumexp}, {q}, &grads);
  EXPECT_TRUE(IsUnimplemented(status)) << status;
  EXPECT_NE(status.message().find("logsumexp output of FusedAttention"), std::string::npos)
      << status;
}

Tensor CastTo(DataType dtype, const Tensor& t) {
  if (dtype == DataType::kDouble) return t;
  Tensor out(dtype, t.shape());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    out.data<float>()[i] = static_cast<float>(t.data<double>()[i]);
  }
  return out;
}

// softmax(scale q k^T + mask) v from BatchMatMul and Softmax, the mask adding -1e9 (a probability
// of exactly 0 in either dtype) where the fused op masks. Every row must attend some key.
Output PlainAttention(const Scope& root, DataType dtype, const Output& q, const Output& k,
                      const Output& v, const std::vector<int32_t>& lengths, bool causal,
                      double scale) {
  Tensor mask(DataType::kDouble, TensorShape({kB, 1, kTq, kTk}));
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t i = 0; i < kTq; ++i) {
      for (int64_t j = 0; j < kTk; ++j) {
        const bool visible = j < lengths[b] && (!causal || j <= i + kTk - kTq);
        mask.data<double>()[(b * kTq + i) * kTk + j] = visible ? 0 : -1e9;
      }
    }
  }
  Output scores = ops::Mul(root, ops::BatchMatMul(root, q, k, {.adj_y = true}),
                           ops::Const(root, CastTo(dtype, Tensor::Scalar(scale))));
  scores = ops::Add(root, scores, ops::Const(root, CastTo(dtype, mask)));
  return ops::BatchMatMul(root, ops::Softmax(root, scores), v);
}

TEST(NnGradTest, FusedAttentionMatchesThePlainComposition) {
  const TensorShape q_shape({kB, kH, kTq, kD}), k_shape({kB, kH, kTk, kD});
  const TensorShape v_shape({kB, kH, kTk, kDv}), out_shape({kB, kH, kTq, kDv});
  for (DataType dtype : {DataType::kDouble, DataType::kFloat}) {
    const double tolerance = dtype == DataType::kDouble ? 1e-12 : 1e-5;
    for (const std::vector<int32_t>& lengths : {std::vector<int32_t>{5, 5}, {4, 1}}) {
      for (bool causal : {false, true}) {
        Scope root = Scope::NewRootScope();
        Output q = ops::Placeholder(root.WithOpName("q"), dtype);
        Output k = ops::Placeholder(root.WithOpName("k"), dtype);
        Output v = ops::Placeholder(root.WithOpName("v"), dtype);
        Output w = ops::Placeholder(root.WithOpName("w"), dtype);
        Output plain = PlainAttention(root, dtype, q, k, v, lengths, causal, 0.5);
        Output fused = ops::FusedAttention(root, q, k, v, Tensor::FromVector<int32_t>(lengths),
                                           {.causal = causal})
                           .output;
        std::vector<Output> plain_grads, fused_grads;
        ASSERT_TRUE(AddSymbolicGradients(root, {plain}, {q, k, v}, {w}, &plain_grads).ok());
        ASSERT_TRUE(AddSymbolicGradients(root, {fused}, {q, k, v}, {w}, &fused_grads).ok());
        std::vector<Output> fetches = {plain, fused};
        for (int i = 0; i < 3; ++i) fetches.insert(fetches.end(), {plain_grads[i], fused_grads[i]});
        StatusOr<std::vector<Tensor>> values =
            RunGraph(root,
                     {{q.name(), CastTo(dtype, RandomTensor(q_shape, -2, 2, 4))},
                      {k.name(), CastTo(dtype, RandomTensor(k_shape, -2, 2, 5))},
                      {v.name(), CastTo(dtype, RandomTensor(v_shape, -1, 1, 6))},
                      {w.name(), CastTo(dtype, RandomTensor(out_shape, -1, 1, 7))}},
                     fetches);
        ASSERT_TRUE(values.ok()) << values.status();
        for (size_t i = 0; i < fetches.size(); i += 2) {
          EXPECT_TENSOR_NEAR((*values)[i + 1], (*values)[i], tolerance, tolerance)
              << DataTypeName(dtype) << " lengths " << lengths[0] << "," << lengths[1] << " causal "
              << causal << (i == 0 ? " output" : " gradient ") << (i / 2);
        }
      }
    }
  }
}

TEST(NnGradTest, EveryNnOpWithAGradientIsRegistered) {
  for (const char* op :
       {"BiasAdd", "Relu", "Sigmoid", "Tanh", "Gelu", "Softplus", "Softmax", "LogSoftmax",
        "SparseSoftmaxCrossEntropyWithLogits", "Conv2D", "MaxPool", "AvgPool", "FusedAttention"}) {
    StatusOr<const GradFunc*> fn = AllGradients().Lookup(op);
    ASSERT_TRUE(fn.ok()) << op << ": " << fn.status();
    EXPECT_TRUE(**fn) << op;
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// FusedLayerNorm's gradient with respect to x, scale and offset, against numeric differences
// (ranks 2 and 3, shapes known or not); a weighted sum of y makes every output element count.
TEST(NnGradTest, FusedLayerNorm) {
  for (const TensorShape& shape : {TensorShape({3, 5}), TensorShape({2, 3, 4})}) {
    for (ShapeKnowledge knowledge : {ShapeKnowledge::kFull, ShapeKnowledge::kNone}) {
      const int64_t channels = shape.dim_size(shape.dims() - 1);
      Scope root = Scope::NewRootScope();
      Output x = Float64Placeholder(root.WithOpName("x"), shape, knowledge);
      Output scale = Float64Placeholder(root.WithOpName("scale"), TensorShape({channels}),
                                        ShapeKnowledge::kFull);
      Output offset = Float64Placeholder(root.WithOpName("offset"), TensorShape({channels}),
                                         ShapeKnowledge::kFull);
      Output y = ops::FusedLayerNorm(root, x, scale, offset, 1e-3f).y;
      Output weighted = ops::Mul(root, y, ops::Const(root, RandomTensor(shape, -2, 2, 31)));
      EXPECT_TRUE(GradientNear(
          root, {x, scale, offset},
          {RandomTensor(shape, -3, 3, 21), RandomTensor(TensorShape({channels}), 0.5, 1.5, 22),
           RandomTensor(TensorShape({channels}), -1, 1, 23)},
          weighted, kGradientTolerance))
          << shape << " knowledge " << static_cast<int>(knowledge);
    }
  }
}

}  // namespace
}  // namespace weft
