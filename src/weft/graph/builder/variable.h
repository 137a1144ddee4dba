// Variable: a resource variable in a graph being built — its VarHandleOp, the AssignVariableOp
// that initializes it from an Initializer, and reads. Node names follow the reference system:
// Variable::Create(scope, "w", ...) in scope "dense" makes the handle "dense/w" (which is also
// the variable's name in its device's ResourceMgr), the initial value under
// "dense/w/Initializer/..." and the initializer "dense/w/Assign". Run initializer() once per
// session before reading:
//
//   Variable w = Variable::Create(root.NewSubScope("dense"), "w", {784, 256}, DataType::kFloat,
//                                 Initializer::GlorotUniform(/*seed=*/7));
//   auto y = ops::MatMul(root, x, w.Read(root));
//   session->Run({}, {}, {w.initializer().node()->name()}, &outputs);
//
// A Variable is a small value (Outputs into the graph); like Scope, not thread-safe.
//
// Variable creators (the reference's variable_creator_scope): while a VariableCreatorScope is
// alive on a thread, Variable::Create on that thread calls its creator instead of building the
// variable itself. Scopes nest; the innermost creator is asked first, and while it runs it is
// taken off the stack, so a creator that calls Variable::Create (to build components) reaches the
// next creator out, or the plain builder. CreateFromValue does not consult creators.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph/builder/node_builder.h"

namespace weft {

// How a variable gets its first value. Random initializers with seed 0 draw different values in
// every session; with a nonzero seed, the same values (also for two variables given the same
// seed, as in the reference system).
class Initializer {
 public:
  static Initializer Zeros();
  static Initializer Ones();
  static Initializer Constant(double value);
  // Uniform in [minval, maxval).
  static Initializer RandomUniform(double minval, double maxval, int64_t seed = 0);
  static Initializer RandomNormal(double mean, double stddev, int64_t seed = 0);
  // Normal(mean, stddev) redrawn beyond two stddev.
  static Initializer TruncatedNormal(double stddev, int64_t seed = 0, double mean = 0);
  // Uniform in [-limit, limit), limit = sqrt(6 / (fan_in + fan_out)); see Fans().
  static Initializer GlorotUniform(int64_t seed = 0);

  // The initial value of a variable of `shape` and `dtype`, built in `scope`. Constant
  // initializers serve every numeric dtype; random ones float32 and float64 only (else an error
  // recorded in the scope).
  Output Build(const Scope& scope, const TensorShape& shape, DataType dtype) const;

  // {fan_in, fan_out} of a weight of `shape`: [in, out] -> {in, out}; for rank >= 3 (a conv
  // filter [H, W, in, out]) both are multiplied by the receptive field H*W; rank 1 -> {n, n};
  // rank 0 -> {1, 1}.
  static std::pair<int64_t, int64_t> Fans(const TensorShape& shape);

  // The same initializer with its seed moved by `offset`, for several variables that should start
  // different (a collection's tables); a seed of 0 (different in every session) stays 0.
  Initializer WithSeedOffset(int64_t offset) const {
    return Initializer(kind_, a_, b_, seed_ == 0 ? 0 : seed_ + offset);
  }
  // The same initializer seeded with `seed` when it has no seed of its own (seed 0); one with a
  // seed keeps it. For a seed derived from a model's (train/random_seed.h).
  Initializer WithDefaultSeed(int64_t seed) const {
    return Initializer(kind_, a_, b_, seed_ == 0 ? seed : seed_);
  }

 private:
  enum class Kind { kConstant, kUniform, kNormal, kTruncatedNormal, kGlorotUniform };
  Initializer(Kind kind, double a, double b, int64_t seed)
      : kind_(kind), a_(a), b_(b), seed_(seed) {}

  Kind kind_;
  double a_;  // constant value | minval | mean
  double b_;  // maxval | stddev
  int64_t seed_;
};

class Variable;

// How updates to a variable made in replica context are combined when a distribution strategy
// makes it (kNone refuses them when there are several replicas, kSum / kMean all-reduce the
// update, kOnlyFirstReplica applies replica 0's update everywhere), and when its components are
// kept in sync (kAuto and kOnWrite: every write is synchronised; kOnRead: each replica writes its
// own component and a cross-replica read aggregates them, as for a metric's totals or a batch
// normalization's moving statistics). A plain single-device variable ignores both.
enum class VariableAggregation { kNone, kSum, kMean, kOnlyFirstReplica };
enum class VariableSynchronization { kAuto, kOnWrite, kOnRead };

struct VariableOptions {
  VariableSynchronization synchronization = VariableSynchronization::kAuto;
  VariableAggregation aggregation = VariableAggregation::kNone;
};

// Makes the variable that Variable::Create was asked for (see the file comment).
using VariableCreator = std::function<Variable(
    const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer, const VariableOptions& options)>;

// Installs `creator` on this thread for the scope's lifetime. Destroy scopes in reverse order of
// creation, on the thread that made them.
class VariableCreatorScope {
 public:
  explicit VariableCreatorScope(VariableCreator creator);
  ~VariableCreatorScope();
  VariableCreatorScope(const VariableCreatorScope&) = delete;
  VariableCreatorScope& operator=(const VariableCreatorScope&) = delete;

  // This thread's creators, outermost first (to re-install them on another thread).
  static std::vector<VariableCreator> CurrentCreators();
};

class Variable {
 public:
  // An empty Variable (as returned after an error in the scope).
  Variable() = default;

  // Builds the handle, the initial value and the initializer in `scope`, or asks this thread's
  // innermost variable creator to (see the file comment). Errors go to the scope (the returned
  // Variable is then empty). `options` are for the creator (a distribution strategy's).
  static Variable Create(const Scope& scope, std::string_view name, const TensorShape& shape,
                         DataType dtype, const Initializer& initializer,
                         const VariableOptions& options = {});
  // Builds the variable itself, asking no creator: what Create does when no creator is installed,
  // and what a creator (a strategy's distributed variable) uses for the components it makes.
  static Variable CreateDirectly(const Scope& scope, std::string_view name,
                                 const TensorShape& shape, DataType dtype,
                                 const Initializer& initializer);
  // A variable whose initializer assigns `initial_value` (built by the caller, e.g. a copy of
  // another variable's initial value); its static shape must be fully known. The initializer is
  // named "<name>/Assign".
  static Variable CreateFromValue(const Scope& scope, std::string_view name,
                                  const Output& initial_value);

  // The VarHandleOp's output (a resource tensor).
  Output handle() const { return handle_; }
  // A ReadVariableOp of this variable built in `scope`; like every op below, placed on the
  // variable's device when its handle asks for one, whatever device `scope` names.
  Output Read(const Scope& scope) const;
  // The AssignVariableOp setting the initial value (no outputs; run it as a target).
  Output initializer() const { return initializer_; }
  // AssignVariableOp / AssignAddVariableOp / AssignSubVariableOp of this variable in `scope`.
  Output Assign(const Scope& scope, const Input& value) const;
  Output AssignAdd(const Scope& scope, const Input& value) const;
  Output AssignSub(const Scope& scope, const Input& value) const;

  // The handle node's name, which is also the variable's name on its device.
  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  explicit operator bool() const { return static_cast<bool>(handle_); }

 private:
  // `scope` placed on the handle's requested device, if it has one.
  Scope WhereItLives(const Scope& scope) const;
  // Adds "<relative>/Assign" of `value` to `handle` and fills in the Variable.
  static Variable Finish(const Scope& scope, const Output& handle, const std::string& relative,
                         const Output& value, DataType dtype, const TensorShape& shape);

  Output handle_;
  Output initializer_;
  std::string name_;
  DataType dtype_ = DataType::kInvalid;
  TensorShape shape_;
};

}  // namespace weft
