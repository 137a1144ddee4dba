// Gradient functions of the math ops: broadcasting binary arithmetic and SelectV2 (gradients
// summed back to each input's shape), the unary functions (Erf included), AddN, MatMul,
// BatchMatMulV2, the reductions Sum, Mean and Max, and Cast between floating types. Comparison,
// index and shape-metadata ops block gradients.
#include <algorithm>

#include "weft/framework/attr_value_util.h"
#include "weft/graph/gradients/gradients.h"
#include "weft/graph/gradients/internal/grad_helpers.h"

namespace weft {
namespace {

using internal::InputOf;
using internal::KeptDimsShape;
using internal::ScalarOf;
using internal::ShapeOf;
using internal::SumToShapeOf;

using Grads = std::vector<Output>;

// d(x + y): the gradient to each side, summed over the dims it was broadcast along.
Status AddGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output x = InputOf(op, 0), y = InputOf(op, 1);
  *dx = {SumToShapeOf(scope, dz[0], x), SumToShapeOf(scope, dz[0], y)};
  return scope.status();
}

Status SubGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output x = InputOf(op, 0), y = InputOf(op, 1);
  *dx = {SumToShapeOf(scope, dz[0], x), SumToShapeOf(scope, ops::Neg(scope, dz[0]), y)};
  return scope.status();
}

Status MulGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output x = InputOf(op, 0), y = InputOf(op, 1);
  *dx = {SumToShapeOf(scope, ops::Mul(scope, dz[0], y), x),
         SumToShapeOf(scope, ops::Mul(scope, x, dz[0]), y)};
  return scope.status();
}

// d(x / y) = dz / y, and -dz * x / y^2 for y.
Status DivGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output x = InputOf(op, 0), y = InputOf(op, 1);
  Output dy = ops::Div(scope, ops::Div(scope, ops::Mul(scope, ops::Neg(scope, dz[0]), x), y), y);
  *dx = {SumToShapeOf(scope, ops::Div(scope, dz[0], y), x), SumToShapeOf(scope, dy, y)};
  return scope.status();
}

// max(x, y) and min(x, y): the gradient goes to x where the output is x (ties go to x, as in the
// reference), else to y.
Status MaximumMinimumGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output x = InputOf(op, 0), y = InputOf(op, 1), z(op, 0);
  Output x_wins = ops::Cast(scope, ops::Equal(scope, z, x), z.dtype());
  Output to_x = ops::Mul(scope, dz[0], x_wins);
  *dx = {SumToShapeOf(scope, to_x, x), SumToShapeOf(scope, ops::Sub(scope, dz[0], to_x), y)};
  return scope.status();
}

// select(c, t, e): t gets dz where c holds and e where it does not, each summed back over the dims
// it was broadcast along (zeros are selected in, not multiplied, so an inf in dz stays put).
Status SelectV2Grad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output condition = InputOf(op, 0), t = InputOf(op, 1), e = InputOf(op, 2);
  Output zero = ops::Const(scope, ScalarOf(dz[0].dtype(), 0));
  *dx = {Output(), SumToShapeOf(scope, ops::SelectV2(scope, condition, dz[0], zero), t),
         SumToShapeOf(scope, ops::SelectV2(scope, condition, zero, dz[0]), e)};
  return scope.status();
}

Status NegGrad(const Scope& scope, Node*, const Grads& dz, Grads* dx) {
  *dx = {ops::Neg(scope, dz[0])};
  return scope.status();
}

Status SquareGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output x = InputOf(op, 0);
  *dx = {ops::Mul(scope, dz[0], ops::Mul(scope, x, 2.0))};
  return scope.status();
}

// d sqrt(x) = dz * 0.5 / y, with y = sqrt(x) the op's output.
Status SqrtGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output y(op, 0);
  *dx = {ops::Div(scope, ops::Mul(scope, dz[0], 0.5), y)};
  return scope.status();
}

Status ExpGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {ops::Mul(scope, dz[0], Output(op, 0))};
  return scope.status();
}

Status LogGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {ops::Div(scope, dz[0], InputOf(op, 0))};
  return scope.status();
}

// d(1 / x) = -dz * y^2, with y = 1 / x the op's output.
Status ReciprocalGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output y(op, 0);
  *dx = {ops::Mul(scope, ops::Neg(scope, dz[0]), ops::Mul(scope, y, y))};
  return scope.status();
}

// d|x| = dz * sign(x); at 0 the gradient is 0, as in the reference system.
Status AbsGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {ops::Mul(scope, dz[0], ops::Sign(scope, InputOf(op, 0)))};
  return scope.status();
}

// Sign is piecewise constant: zeros, which the reference system also returns.
Status SignGrad(const Scope& scope, Node* op, const Grads&, Grads* dx) {
  *dx = {ops::ZerosLike(scope, InputOf(op, 0))};
  return scope.status();
}

// d x^(-1/2) = -0.5 * dz * y^3, with y = rsqrt(x) the op's output.
Status RsqrtGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output y(op, 0);
  *dx = {ops::Mul(scope, ops::Mul(scope, dz[0], -0.5), ops::Mul(scope, y, ops::Mul(scope, y, y)))};
  return scope.status();
}

Status Log1pGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  *dx = {ops::Div(scope, dz[0], ops::Add(scope, InputOf(op, 0), 1.0))};
  return scope.status();
}

// d erf(x) = dz * 2 / sqrt(pi) * exp(-x^2).
Status ErfGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
  Output x = InputOf(op, 0);
  *dx = {ops::Mul(scope, ops::Mul(scope, dz[0], kTwoOverSqrtPi),
                  ops::Exp(scope, ops::Neg(scope, ops::Square(scope, x))))};
  return scope.status();
}

Status AddNGrad(const Scope&, Node* op, const Grads& dz, Grads* dx) {
  dx->assign(op->num_inputs(), dz[0]);
  return Status::OK();
}

// z = op(a) op(b): each gradient is a MatMul of dz with the other operand, transposed so that the
// result has the stored (untransposed) shape of its input.
Status MatMulGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  bool ta = false, tb = false;
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "transpose_a", &ta));
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "transpose_b", &tb));
  Output a = InputOf(op, 0), b = InputOf(op, 1), g = dz[0];
  if (!ta && !tb) {  // z = a b
    *dx = {ops::MatMul(scope, g, b, {.transpose_b = true}),
           ops::MatMul(scope, a, g, {.transpose_a = true})};
  } else if (ta && !tb) {  // z = a' b
    *dx = {ops::MatMul(scope, b, g, {.transpose_b = true}), ops::MatMul(scope, a, g)};
  } else if (!ta && tb) {  // z = a b'
    *dx = {ops::MatMul(scope, g, b), ops::MatMul(scope, g, a, {.transpose_a = true})};
  } else {  // z = a' b'
    *dx = {ops::MatMul(scope, b, g, {.transpose_a = true, .transpose_b = true}),
           ops::MatMul(scope, g, a, {.transpose_a = true, .transpose_b = true})};
  }
  return scope.status();
}

// True when neither side of a BatchMatMulV2 can have been broadcast: both are matrices, or their
// batch dims (all but the last two) are known and equal.
bool BatchDimsMatch(const PartialShape& x, const PartialShape& y) {
  if (!x.rank_known() || !y.rank_known()) return false;
  if (x.rank() == 2 && y.rank() == 2) return true;
  const PartialShape xb(std::vector<int64_t>(x.dims().begin(), x.dims().end() - 2));
  const PartialShape yb(std::vector<int64_t>(y.dims().begin(), y.dims().end() - 2));
  return xb.IsFullyDefined() && xb == yb;
}

// z = adj(x) adj(y) per batch entry: per matrix, the four cases of MatMulGrad. Each gradient has
// the output's (broadcast) batch dims and is then summed over the ones its input was broadcast
// along and reshaped to it, as the reference does with BroadcastGradientArgs on the batch shapes
// (SumToShapeOf takes whole shapes, whose matrix dims always agree).
Status BatchMatMulGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  bool adj_x = false, adj_y = false;
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "adj_x", &adj_x));
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "adj_y", &adj_y));
  Output x = InputOf(op, 0), y = InputOf(op, 1), g = dz[0];
  Output gx, gy;
  if (!adj_x && !adj_y) {  // z = x y
    gx = ops::BatchMatMul(scope, g, y, {.adj_y = true});
    gy = ops::BatchMatMul(scope, x, g, {.adj_x = true});
  } else if (!adj_x && adj_y) {  // z = x y'
    gx = ops::BatchMatMul(scope, g, y);
    gy = ops::BatchMatMul(scope, g, x, {.adj_x = true});
  } else if (adj_x && !adj_y) {  // z = x' y
    gx = ops::BatchMatMul(scope, y, g, {.adj_y = true});
    gy = ops::BatchMatMul(scope, x, g);
  } else {  // z = x' y'
    gx = ops::BatchMatMul(scope, y, g, {.adj_x = true, .adj_y = true});
    gy = ops::BatchMatMul(scope, g, x, {.adj_x = true, .adj_y = true});
  }
  if (BatchDimsMatch(x.shape(), y.shape())) {
    *dx = {gx, gy};
  } else {
    *dx = {SumToShapeOf(scope, gx, x), SumToShapeOf(scope, gy, y)};
  }
  return scope.status();
}

// The keep_dims shape of a reduction (its input's shape with 1 at the reduced axes), or an empty
// Output when the reduction kept its dims already.
StatusOr<Output> KeptShapeUnlessKept(const Scope& scope, Node* op) {
  bool keep_dims = false;
  WEFT_RETURN_IF_ERROR(GetNodeAttr(op->def(), "keep_dims", &keep_dims));
  if (keep_dims) return Output();
  return KeptDimsShape(scope, InputOf(op, 0), InputOf(op, 1));
}

Output ReshapedTo(const Scope& scope, const Output& t, const Output& shape) {
  return shape ? ops::Reshape(scope, t, shape) : t;
}

// Every input element of a sum receives the gradient of its output element.
StatusOr<Output> SumGradient(const Scope& scope, Node* op, const Output& dz) {
  WEFT_ASSIGN_OR_RETURN(Output kept_shape, KeptShapeUnlessKept(scope, op));
  return ops::BroadcastTo(scope, ReshapedTo(scope, dz, kept_shape), ShapeOf(scope, InputOf(op, 0)));
}

Status SumGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  WEFT_ASSIGN_OR_RETURN(Output grad, SumGradient(scope, op, dz[0]));
  *dx = {grad, Output()};
  return scope.status();
}

// The sum's gradient divided by the number of elements averaged into each output.
Status MeanGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  WEFT_ASSIGN_OR_RETURN(Output grad, SumGradient(scope, op, dz[0]));
  Output input = InputOf(op, 0), output(op, 0);
  const DataType dtype = output.dtype();
  const int64_t in_count = input.shape().num_elements();
  const int64_t out_count = output.shape().num_elements();
  Output count;
  if (in_count >= 0 && out_count >= 0) {
    const double ratio =
        static_cast<double>(in_count) / static_cast<double>(std::max<int64_t>(1, out_count));
    count = ops::Const(scope, ScalarOf(dtype, ratio));
  } else {
    count = ops::Div(scope, ops::Cast(scope, ops::Size(scope, input), dtype),
                     ops::Cast(scope, ops::Maximum(scope, ops::Size(scope, output), 1), dtype));
  }
  *dx = {ops::Div(scope, grad, count), Output()};
  return scope.status();
}

// The gradient goes to the elements equal to the maximum, divided equally among ties.
Status MaxGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  Output input = InputOf(op, 0), axes = InputOf(op, 1);
  WEFT_ASSIGN_OR_RETURN(Output kept_shape, KeptShapeUnlessKept(scope, op));
  Output max_kept = ReshapedTo(scope, Output(op, 0), kept_shape);
  Output dz_kept = ReshapedTo(scope, dz[0], kept_shape);
  Output is_max = ops::Cast(scope, ops::Equal(scope, input, max_kept), input.dtype());
  Output ties = ops::Sum(scope, is_max, axes, {.keep_dims = true});
  *dx = {ops::Mul(scope, ops::Div(scope, is_max, ties), dz_kept), Output()};
  return scope.status();
}

bool IsFloating(DataType dtype) {
  return dtype == DataType::kFloat || dtype == DataType::kDouble || dtype == DataType::kBFloat16;
}

// Between floating types the gradient is cast back; to or from integers there is none.
Status CastGrad(const Scope& scope, Node* op, const Grads& dz, Grads* dx) {
  const DataType src = op->input_type(0), dst = op->output_type(0);
  if (!IsFloating(src) || !IsFloating(dst)) {
    *dx = {Output()};
    return Status::OK();
  }
  *dx = {src == dst ? dz[0] : ops::Cast(scope, dz[0], src)};
  return scope.status();
}

}  // namespace

void RegisterMathGradients(GradientRegistry& registry) {
  registry.Register("Add", AddGrad);
  registry.Register("Sub", SubGrad);
  registry.Register("Mul", MulGrad);
  registry.Register("Div", DivGrad);
  registry.Register("Maximum", MaximumMinimumGrad);
  registry.Register("Minimum", MaximumMinimumGrad);
  registry.Register("SelectV2", SelectV2Grad);
  registry.Register("Neg", NegGrad);
  registry.Register("Square", SquareGrad);
  registry.Register("Sqrt", SqrtGrad);
  registry.Register("Exp", ExpGrad);
  registry.Register("Log", LogGrad);
  registry.Register("Reciprocal", ReciprocalGrad);
  registry.Register("Abs", AbsGrad);
  registry.Register("Sign", SignGrad);
  registry.Register("Rsqrt", RsqrtGrad);
  registry.Register("Log1p", Log1pGrad);
  registry.Register("Erf", ErfGrad);
  registry.Register("AddN", AddNGrad);
  registry.Register("MatMul", MatMulGrad);
  registry.Register("BatchMatMulV2", BatchMatMulGrad);
  registry.Register("Sum", SumGrad);
  registry.Register("Mean", MeanGrad);
  registry.Register("Max", MaxGrad);
  registry.Register("Cast", CastGrad);
  for (const char* op : {"Equal", "Less", "LessEqual", "Greater", "GreaterEqual", "ArgMax",
                         "BroadcastGradientArgs"}) {
    registry.RegisterNoGradient(op);
  }
  // Its gradient would be a second all-reduce of the output gradients, under an instance_key every
  // member agrees on; one member's gradient function cannot allocate that key for the group.
  registry.RegisterNotDifferentiable(
      "CollectiveAllReduce",
      "its gradient needs a new instance_key agreed by the whole group; all-reduce the gradients "
      "after differentiating instead (as Strategy does)");
  // The sent value reaches every receiver, so the sender's gradient would sum the receivers'
  // gradients: a reduction under an instance_key the whole group agrees on, as above.
  registry.RegisterNotDifferentiable(
      "CollectiveBroadcastSend",
      "its gradient sums every receiver's output gradient, a collective that needs a new "
      "instance_key agreed by the whole group; broadcast values that are not trained (initial "
      "values), or wrap the value in StopGradient");
  // A receiver has no input to pass a gradient to; the sender's side decides (above).
  registry.RegisterNoGradient("CollectiveBroadcastRecv");
  registry.RegisterNotDifferentiable(
      "CollectiveAllGather",
      "each member's gradient is its slice of the sum of every member's output gradient, a "
      "collective that needs a new instance_key agreed by the whole group; gather values that are "
      "not trained (metrics, predictions), or wrap them in StopGradient");
}

}  // namespace weft
