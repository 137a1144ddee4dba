// Math ops: elementwise arithmetic and comparisons with NumPy broadcasting, SelectV2, unary
// functions, AddN, MatMul, BatchMatMulV2, Cast and BroadcastGradientArgs. Reductions (Sum, Mean,
// Max, ArgMax) live in reduction_ops.cc.
#include <algorithm>
#include <vector>

#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {

void RegisterReductionOps(OpRegistry& registry);  // reduction_ops.cc

namespace {

void RegisterBinaryOps(OpRegistry& registry) {
  struct Binary {
    const char* name;
    const char* doc;
  };
  for (const Binary& op : {Binary{"Add", "x + y elementwise, with NumPy broadcasting."},
                           Binary{"Sub", "x - y elementwise, with NumPy broadcasting."},
                           Binary{"Mul", "x * y elementwise, with NumPy broadcasting."},
                           Binary{"Div", "x / y elementwise (integers truncate), broadcasting."},
                           Binary{"Maximum", "max(x, y) elementwise, with NumPy broadcasting."},
                           Binary{"Minimum", "min(x, y) elementwise, with NumPy broadcasting."}}) {
    registry.RegisterOrDie(OpDefBuilder(op.name)
                               .Input("x: T")
                               .Input("y: T")
                               .Output("z: T")
                               .Attr("T: {float32, float64, int32, int64}")
                               .SetShapeFn(shape_fn::BroadcastBinaryOp)
                               .Doc(op.doc));
  }
  registry.RegisterOrDie(OpDefBuilder("Equal")
                             .Input("x: T")
                             .Input("y: T")
                             .Output("z: bool")
                             .Attr("T: {float32, float64, int32, int64, bool}")
                             .SetShapeFn(shape_fn::BroadcastBinaryOp)
                             .Doc("x == y elementwise, with NumPy broadcasting."));
  // Orderings: the reference system defines them on real numbers only, so bool is not allowed.
  for (const Binary& op :
       {Binary{"Less", "x < y elementwise, with NumPy broadcasting."},
        Binary{"LessEqual", "x <= y elementwise, with NumPy broadcasting."},
        Binary{"Greater", "x > y elementwise, with NumPy broadcasting."},
        Binary{"GreaterEqual", "x >= y elementwise, with NumPy broadcasting."}}) {
    registry.RegisterOrDie(OpDefBuilder(op.name)
                               .Input("x: T")
                               .Input("y: T")
                               .Output("z: bool")
                               .Attr("T: {float32, float64, int32, int64}")
                               .SetShapeFn(shape_fn::BroadcastBinaryOp)
                               .Doc(op.doc));
  }
}

// SelectV2: the NumPy broadcast of condition, t and e.
Status SelectV2Shape(InferenceContext& context) {
  StatusOr<PartialShape> values = BroadcastShapes(context.input(1), context.input(2));
  StatusOr<PartialShape> out = PartialShape();
  if (values.ok()) out = BroadcastShapes(context.input(0), *values);
  if (!values.ok() || !out.ok()) {
    return context.Error("condition ", context.input(0).DebugString(), ", t ",
                         context.input(1).DebugString(), " and e ", context.input(2).DebugString(),
                         " cannot be broadcast together");
  }
  context.set_output(0, std::move(out).value());
  return Status::OK();
}

void RegisterUnaryOps(OpRegistry& registry) {
  struct Unary {
    const char* name;
    const char* types;
    const char* doc;
  };
  constexpr const char* kAll = "T: {float32, float64, int32, int64}";
  constexpr const char* kFloat = "T: {float32, float64}";
  for (const Unary& op :
       {Unary{"Neg", kAll, "-x elementwise."}, Unary{"Square", kAll, "x * x elementwise."},
        Unary{"Sqrt", kFloat, "Square root of x elementwise."},
        Unary{"Exp", kFloat, "e to the power x elementwise."},
        Unary{"Log", kFloat, "Natural logarithm of x elementwise."},
        Unary{"Reciprocal", kFloat, "1 / x elementwise."}, Unary{"Abs", kAll, "|x| elementwise."},
        Unary{"Sign", kAll, "-1, 0 or 1 elementwise, as x is negative, zero or positive."},
        Unary{"Rsqrt", kFloat, "1 / sqrt(x) elementwise."},
        Unary{"Log1p", kFloat, "log(1 + x) elementwise, accurate for x near 0."},
        Unary{"Erf", kFloat, "The Gauss error function 2/sqrt(pi) * int_0^x exp(-t^2) dt."}}) {
    registry.RegisterOrDie(OpDefBuilder(op.name)
                               .Input("x: T")
                               .Output("y: T")
                               .Attr(op.types)
                               .SetShapeFn(shape_fn::UnchangedShape)
                               .Doc(op.doc));
  }
}

// AddN: every input must have the same shape; the output has the merged (most known) shape.
Status AddNShape(InferenceContext& context) {
  PartialShape merged = context.input(0);
  for (int i = 1; i < context.num_inputs(); ++i) {
    StatusOr<PartialShape> next = merged.Merge(context.input(i));
    if (!next.ok()) {
      return context.Error("all inputs must have the same shape, but input 0 is ",
                           context.input(0).DebugString(), " and input ", i, " is ",
                           context.input(i).DebugString());
    }
    merged = std::move(next).value();
  }
  context.set_output(0, merged);
  return Status::OK();
}

// MatMul: a [M,K] (or [K,M] with transpose_a) times b [K,N] (or [N,K]) -> [M,N].
Status MatMulShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(0, 2));
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 2));
  bool transpose_a = false, transpose_b = false;
  WEFT_RETURN_IF_ERROR(context.GetAttr("transpose_a", &transpose_a));
  WEFT_RETURN_IF_ERROR(context.GetAttr("transpose_b", &transpose_b));
  const PartialShape& a = context.input(0);
  const PartialShape& b = context.input(1);
  auto dim = [](const PartialShape& s, int i) {
    return s.rank_known() ? s.dim(i) : PartialShape::kUnknownDim;
  };
  int64_t m = dim(a, transpose_a ? 1 : 0), k_a = dim(a, transpose_a ? 0 : 1);
  int64_t k_b = dim(b, transpose_b ? 1 : 0), n = dim(b, transpose_b ? 0 : 1);
  if (k_a >= 0 && k_b >= 0 && k_a != k_b) {
    return context.Error("inner dimensions must be equal, but are ", k_a, " and ", k_b, " for ",
                         a.DebugString(), " x ", b.DebugString(),
                         transpose_a || transpose_b ? StrCat(" (transpose_a=", transpose_a,
                                                             ", transpose_b=", transpose_b, ")")
                                                    : "");
  }
  context.set_output(0, PartialShape({m, n}));
  return Status::OK();
}

// BatchMatMulV2: x [..., M, K] (or [..., K, M] with adj_x) times y [..., K, N] (or [..., N, K]
// with adj_y) -> [B..., M, N], B the NumPy broadcast of the batch dims (all but the last two) of x
// and y. An unknown rank on either side leaves the output rank unknown: the batch rank is unknown.
Status BatchMatMulV2Shape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 2));
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(1, 2));
  bool adj_x = false, adj_y = false;
  WEFT_RETURN_IF_ERROR(context.GetAttr("adj_x", &adj_x));
  WEFT_RETURN_IF_ERROR(context.GetAttr("adj_y", &adj_y));
  const PartialShape& x = context.input(0);
  const PartialShape& y = context.input(1);
  if (!x.rank_known() || !y.rank_known()) {
    context.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  const int rx = x.rank(), ry = y.rank();
  const int64_t m = x.dim(rx - (adj_x ? 1 : 2)), k_x = x.dim(rx - (adj_x ? 2 : 1));
  const int64_t k_y = y.dim(ry - (adj_y ? 1 : 2)), n = y.dim(ry - (adj_y ? 2 : 1));
  if (k_x >= 0 && k_y >= 0 && k_x != k_y) {
    return context.Error("inner dimensions must be equal, but are ", k_x, " and ", k_y, " for ",
                         x.DebugString(), " x ", y.DebugString(),
                         adj_x || adj_y ? StrCat(" (adj_x=", adj_x, ", adj_y=", adj_y, ")") : "");
  }
  StatusOr<PartialShape> batch =
      BroadcastShapes(PartialShape(std::vector<int64_t>(x.dims().begin(), x.dims().end() - 2)),
                      PartialShape(std::vector<int64_t>(y.dims().begin(), y.dims().end() - 2)));
  if (!batch.ok()) {
    return context.Error("batch dimensions of ", x.DebugString(), " and ", y.DebugString(),
                         " cannot be broadcast together");
  }
  std::vector<int64_t> dims = batch->dims();
  dims.push_back(m);
  dims.push_back(n);
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

void RegisterBatchMatMulOp(OpRegistry& registry) {
  registry.RegisterOrDie(
      OpDefBuilder("BatchMatMulV2")
          .Input("x: T")
          .Input("y: T")
          .Output("output: T")
          .Attr("adj_x: bool = false")
          .Attr("adj_y: bool = false")
          .Attr("T: {float32, float64, int32, int64, bfloat16}")
          .SetShapeFn(BatchMatMulV2Shape)
          .Doc("Matrix product of each matrix (last two dims) of x and y, each optionally "
               "transposed; the batch dims broadcast."));
}

// The number of gradient reduction axes for each side of a broadcast of s0 with s1 (the kernel
// computes the axes themselves); InvalidArgument when the shapes cannot be broadcast.
Status GradientAxisCounts(const InferenceContext& context, const std::vector<int64_t>& s0,
                          const std::vector<int64_t>& s1, int64_t* n0, int64_t* n1) {
  *n0 = *n1 = 0;
  if (s0 == s1) return Status::OK();
  size_t rank = std::max(s0.size(), s1.size());
  for (size_t i = 0; i < rank; ++i) {
    int64_t d0 = i < rank - s0.size() ? 1 : s0[i - (rank - s0.size())];
    int64_t d1 = i < rank - s1.size() ? 1 : s1[i - (rank - s1.size())];
    if (d0 != 1 && d1 != 1 && d0 != d1) {
      return context.Error("incompatible shapes: [", StrJoin(s0, ","), "] vs. [", StrJoin(s1, ","),
                           "]");
    }
    if (d0 == 1) ++*n0;
    if (d1 == 1) ++*n1;
  }
  return Status::OK();
}

Status BroadcastGradientArgsShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(0, 1));
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 1));
  std::optional<std::vector<int64_t>> s0 = context.ConstantIntVector(0);
  std::optional<std::vector<int64_t>> s1 = context.ConstantIntVector(1);
  if (s0.has_value() && s1.has_value()) {
    int64_t n0 = 0, n1 = 0;
    WEFT_RETURN_IF_ERROR(GradientAxisCounts(context, *s0, *s1, &n0, &n1));
    context.set_output(0, PartialShape({n0}));
    context.set_output(1, PartialShape({n1}));
    return Status::OK();
  }
  context.set_output(0, PartialShape::UnknownOfRank(1));
  context.set_output(1, PartialShape::UnknownOfRank(1));
  return Status::OK();
}

// The fused products graph/fuse_ops.h makes inside one partition (internal ops).
void RegisterFusedMatMulOps(OpRegistry& registry) {
  // What graph/fuse_ops.h makes of MatMul -> BiasAdd (-> Relu) inside one partition.
  registry.RegisterOrDie(OpDefBuilder("_FusedMatMul")
                             .Input("a: T")
                             .Input("b: T")
                             .Input("bias: T")
                             .Output("product: T")
                             .Attr("transpose_a: bool = false")
                             .Attr("transpose_b: bool = false")
                             .Attr("T: {float32, float64}")
                             .Attr("activation: {'None', 'Relu'} = 'None'")
                             .SetIsInternal()
                             .SetShapeFn(MatMulShape)
                             .Doc("MatMul, plus bias [N] on every row, then the activation."));
  // What graph/fuse_ops.h makes of a bfloat16 MatMul whose product is at once widened to float32
  // (-> BiasAdd (-> Relu)), as the mixed_bfloat16 policy's layers and their gradients build it.
  registry.RegisterOrDie(OpDefBuilder("_FusedBFloat16MatMul")
                             .Input("a: bfloat16")
                             .Input("b: bfloat16")
                             .Input("bias: num_bias * float32")
                             .Output("product: float32")
                             .Attr("transpose_a: bool = false")
                             .Attr("transpose_b: bool = false")
                             .Attr("num_bias: int >= 0 = 0")
                             .Attr("activation: {'None', 'Relu'} = 'None'")
                             .SetIsInternal()
                             .SetShapeFn(MatMulShape)
                             .Doc("MatMul of bfloat16 a and b accumulated and written in float32, "
                                  "plus bias [N] on every row when num_bias is 1, then the "
                                  "activation."));
}

}  // namespace

void RegisterMathOps(OpRegistry& registry) {
  RegisterBinaryOps(registry);
  RegisterUnaryOps(registry);
  registry.RegisterOrDie(OpDefBuilder("SelectV2")
                             .Input("condition: bool")
                             .Input("t: T")
                             .Input("e: T")
                             .Output("output: T")
                             .Attr("T: {float32, float64, int32, int64, uint8, bool}")
                             .SetShapeFn(SelectV2Shape)
                             .Doc("t where condition is true, else e; all three broadcast."));
  registry.RegisterOrDie(OpDefBuilder("AddN")
                             .Input("inputs: N * T")
                             .Output("sum: T")
                             .Attr("N: int >= 1")
                             .Attr("T: {float32, float64, int32, int64}")
                             .SetShapeFn(AddNShape)
                             .Doc("Elementwise sum of N tensors of the same shape."));
  registry.RegisterOrDie(OpDefBuilder("MatMul")
                             .Input("a: T")
                             .Input("b: T")
                             .Output("product: T")
                             .Attr("transpose_a: bool = false")
                             .Attr("transpose_b: bool = false")
                             .Attr("T: {float32, float64, int32, int64, bfloat16}")
                             .SetShapeFn(MatMulShape)
                             .Doc("Matrix product of a and b, each optionally transposed (bfloat16 "
                                  "accumulates in float32)."));
  RegisterBatchMatMulOp(registry);
  RegisterFusedMatMulOps(registry);
  registry.RegisterOrDie(OpDefBuilder("Cast")
                             .Input("x: SrcT")
                             .Output("y: DstT")
                             .Attr("SrcT: {float32, float64, int32, int64, uint8, bool, bfloat16}")
                             .Attr("DstT: {float32, float64, int32, int64, uint8, bool, bfloat16}")
                             .Attr("Truncate: bool = false")
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("Converts x elementwise to DstT (C++ conversion rules)."));
  registry.RegisterOrDie(
      OpDefBuilder("BroadcastGradientArgs")
          .Input("s0: T")
          .Input("s1: T")
          .Output("r0: T")
          .Output("r1: T")
          .HostMemory("s0")
          .HostMemory("s1")
          .HostMemory("r0")
          .HostMemory("r1")
          .Attr("T: {int32, int64}")
          .SetIsInternal()
          .SetShapeFn(BroadcastGradientArgsShape)
          .Doc("Axes to sum the gradients of a broadcasting binary op over, for each input."));
  RegisterReductionOps(registry);
}

}  // namespace weft::ops
