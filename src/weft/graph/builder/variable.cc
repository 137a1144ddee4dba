#include "weft/graph/builder/variable.h"

#include <cmath>

#include "weft/core/logging.h"
#include "weft/graph/builder/ops/array_ops.h"
#include "weft/graph/builder/ops/math_ops.h"
#include "weft/graph/builder/ops/random_ops.h"
#include "weft/graph/builder/ops/state_ops.h"

namespace weft {
namespace {

bool IsFloating(DataType dtype) { return dtype == DataType::kFloat || dtype == DataType::kDouble; }

// A scalar of `dtype` holding `value` (an explicit Tensor, so it keeps that dtype).
StatusOr<Tensor> ScalarOf(DataType dtype, double value) {
  Tensor out;
  bool ok =
      VisitNumericType(dtype, [&]<typename T>() { out = Tensor::Scalar(static_cast<T>(value)); });
  if (!ok) return InvalidArgument("no constant initializer for ", DataTypeName(dtype));
  return out;
}

Tensor DimsOf(const TensorShape& shape) { return Tensor::FromVector(shape.dim_sizes()); }

// The variable's own name within `name` after the scope made it unique: "w" or "w_1".
std::string RelativeName(std::string_view requested, const std::string& actual) {
  if (actual.size() >= requested.size() &&
      actual.compare(actual.size() - requested.size(), requested.size(), requested) == 0) {
    return std::string(requested);
  }
  return StrCat(requested, actual.substr(actual.rfind('_')));
}

// This thread's variable creators, outermost first.
thread_local std::vector<VariableCreator> creator_stack;

}  // namespace

VariableCreatorScope::VariableCreatorScope(VariableCreator creator) {
  creator_stack.push_back(std::move(creator));
}

VariableCreatorScope::~VariableCreatorScope() {
  WEFT_CHECK(!creator_stack.empty());
  creator_stack.pop_back();
}

std::vector<VariableCreator> VariableCreatorScope::CurrentCreators() { return creator_stack; }

Initializer Initializer::Zeros() { return Initializer(Kind::kConstant, 0, 0, 0); }
Initializer Initializer::Ones() { return Initializer(Kind::kConstant, 1, 0, 0); }
Initializer Initializer::Constant(double value) {
  return Initializer(Kind::kConstant, value, 0, 0);
}
Initializer Initializer::RandomUniform(double minval, double maxval, int64_t seed) {
  return Initializer(Kind::kUniform, minval, maxval, seed);
}
Initializer Initializer::RandomNormal(double mean, double stddev, int64_t seed) {
  return Initializer(Kind::kNormal, mean, stddev, seed);
}
Initializer Initializer::TruncatedNormal(double stddev, int64_t seed, double mean) {
  return Initializer(Kind::kTruncatedNormal, mean, stddev, seed);
}
Initializer Initializer::GlorotUniform(int64_t seed) {
  return Initializer(Kind::kGlorotUniform, 0, 0, seed);
}

std::pair<int64_t, int64_t> Initializer::Fans(const TensorShape& shape) {
  int rank = shape.dims();
  if (rank == 0) return {1, 1};
  if (rank == 1) return {shape.dim_size(0), shape.dim_size(0)};
  int64_t receptive = 1;
  for (int i = 0; i < rank - 2; ++i) receptive *= shape.dim_size(i);
  return {receptive * shape.dim_size(rank - 2), receptive * shape.dim_size(rank - 1)};
}

Output Initializer::Build(const Scope& scope, const TensorShape& shape, DataType dtype) const {
  if (kind_ == Kind::kConstant) {
    StatusOr<Tensor> value = ScalarOf(dtype, a_);
    if (!value.ok()) {
      scope.UpdateStatus(value.status());
      return Output();
    }
    return ops::Fill(scope, DimsOf(shape), *value);
  }
  if (!IsFloating(dtype)) {
    scope.UpdateStatus(
        InvalidArgument("random initializers need a float32 or float64 variable, "
                        "not ",
                        DataTypeName(dtype)));
    return Output();
  }
  ops::RandomAttrs seeds{.seed = seed_, .seed2 = 0};
  Tensor dims = DimsOf(shape);
  switch (kind_) {
    case Kind::kUniform: {
      Output u = ops::RandomUniform(scope, dims, dtype, seeds);
      return ops::Add(scope, ops::Mul(scope, u, b_ - a_), a_);
    }
    case Kind::kGlorotUniform: {
      auto [fan_in, fan_out] = Fans(shape);
      double limit = std::sqrt(6.0 / static_cast<double>(std::max<int64_t>(1, fan_in + fan_out)));
      Output u = ops::RandomUniform(scope, dims, dtype, seeds);
      return ops::Sub(scope, ops::Mul(scope, u, 2 * limit), limit);
    }
    case Kind::kNormal:
      return ops::Add(
          scope, ops::Mul(scope, ops::RandomStandardNormal(scope, dims, dtype, seeds), b_), a_);
    case Kind::kTruncatedNormal:
      return ops::Add(scope, ops::Mul(scope, ops::TruncatedNormal(scope, dims, dtype, seeds), b_),
                      a_);
    case Kind::kConstant:
      break;
  }
  return Output();
}

Variable Variable::Create(const Scope& scope, std::string_view name, const TensorShape& shape,
                          DataType dtype, const Initializer& initializer,
                          const VariableOptions& options) {
  if (!creator_stack.empty()) {
    // Off the stack while it runs, so the creator's own Variable::Create calls go further out.
    VariableCreator creator = std::move(creator_stack.back());
    creator_stack.pop_back();
    struct Restore {
      VariableCreator& creator;
      ~Restore() { creator_stack.push_back(std::move(creator)); }
    } restore{creator};
    return creator(scope, name, shape, dtype, initializer, options);
  }
  return CreateDirectly(scope, name, shape, dtype, initializer);
}

Variable Variable::CreateDirectly(const Scope& scope, std::string_view name,
                                  const TensorShape& shape, DataType dtype,
                                  const Initializer& initializer) {
  Output handle = ops::VarHandleOp(scope.WithOpName(name), dtype, PartialShape(shape));
  if (!handle) return Variable();
  std::string relative = RelativeName(name, handle.node()->name());
  Output value =
      initializer.Build(scope.NewSubScope(StrCat(relative, "/Initializer")), shape, dtype);
  return Finish(scope, handle, relative, value, dtype, shape);
}

Variable Variable::CreateFromValue(const Scope& scope, std::string_view name,
                                   const Output& initial_value) {
  if (!scope.ok()) return Variable();
  if (!initial_value) {
    scope.UpdateStatus(InvalidArgument("variable '", name, "': the initial value is missing"));
    return Variable();
  }
  const PartialShape partial = initial_value.shape();
  if (!partial.IsFullyDefined()) {
    scope.UpdateStatus(InvalidArgument("variable '", name, "': the initial value ",
                                       initial_value.name(), " has shape ", partial.DebugString(),
                                       ", which is not fully known"));
    return Variable();
  }
  const TensorShape shape = partial.ToTensorShape();
  const DataType dtype = initial_value.dtype();
  Output handle = ops::VarHandleOp(scope.WithOpName(name), dtype, partial);
  if (!handle) return Variable();
  return Finish(scope, handle, RelativeName(name, handle.node()->name()), initial_value, dtype,
                shape);
}

Variable Variable::Finish(const Scope& scope, const Output& handle, const std::string& relative,
                          const Output& value, DataType dtype, const TensorShape& shape) {
  Output assign =
      ops::AssignVariableOp(scope.WithOpName(StrCat(relative, "/Assign")), handle, value);
  if (!assign) return Variable();
  Variable variable;
  variable.handle_ = handle;
  variable.initializer_ = assign;
  variable.name_ = handle.node()->name();
  variable.dtype_ = dtype;
  variable.shape_ = shape;
  return variable;
}

Scope Variable::WhereItLives(const Scope& scope) const {
  // A resource is only meaningful on the device that holds it (the placer puts its users there):
  // a variable read from a replica on another device is read where it lives and the value moves.
  if (!handle_ || handle_.node()->requested_device().empty()) return scope;
  return scope.WithDevice(handle_.node()->requested_device());
}

Output Variable::Read(const Scope& scope) const {
  return ops::ReadVariableOp(WhereItLives(scope), handle_, dtype_);
}

Output Variable::Assign(const Scope& scope, const Input& value) const {
  return ops::AssignVariableOp(WhereItLives(scope), handle_, value);
}

Output Variable::AssignAdd(const Scope& scope, const Input& value) const {
  return ops::AssignAddVariableOp(WhereItLives(scope), handle_, value);
}

Output Variable::AssignSub(const Scope& scope, const Input& value) const {
  return ops::AssignSubVariableOp(WhereItLives(scope), handle_, value);
}

}  // namespace weft
