// Checks that Weft's registries agree with each other: every kernel serves a registered op and no
// two kernels can serve the same node; every user-facing op has an ops:: builder (the table below
// calls each builder once); every op that can output floats has a gradient decision. Internal ops
// (OpDef::is_internal) are made by Weft itself and need neither a builder nor a gradient.
#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "weft/framework/kernel_registry.h"
#include "weft/framework/op_registry.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/gradients/gradients.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"

namespace weft {
namespace {

std::string Join(const std::set<std::string>& names) {
  return StrJoin(std::vector<std::string>(names.begin(), names.end()), ", ");
}

bool IsFloating(DataType type) { return type == DataType::kFloat || type == DataType::kDouble; }

// Whether some node of `op` can have a float output.
bool CanOutputFloat(const OpDef& op) {
  for (const ArgDef& output : op.outputs) {
    if (!output.type_list_attr.empty()) return true;  // its dtypes are the node's to choose
    if (output.type_attr.empty()) {
      if (IsFloating(output.type)) return true;
      continue;
    }
    const AttrDef* attr = op.FindAttr(output.type_attr);
    if (attr == nullptr || attr->allowed_types.empty()) return true;  // any type
    if (std::any_of(attr->allowed_types.begin(), attr->allowed_types.end(), IsFloating)) {
      return true;
    }
  }
  return false;
}

std::set<std::string> InternalOps() {
  std::set<std::string> internal;
  for (const std::string& name : ops::AllOps().OpNames()) {
    if ((*ops::AllOps().LookUp(name))->is_internal) internal.insert(name);
  }
  return internal;
}

// Kernels whose op is not in the op registry, and kernels constraining an attr their op lacks or a
// type it does not allow (such a kernel never matches a node).
struct KernelProblems {
  std::set<std::string> unknown_ops;
  std::set<std::string> bad_constraints;
};

KernelProblems FindKernelProblems(const KernelRegistry& kernels, const OpRegistry& ops) {
  KernelProblems problems;
  for (const KernelDef* def : kernels.KernelDefs()) {
    StatusOr<const OpDef*> op = ops.LookUp(def->op());
    if (!op.ok()) {
      problems.unknown_ops.insert(def->op());
      continue;
    }
    for (const auto& [attr_name, allowed] : def->constraints()) {
      const AttrDef* attr = (*op)->FindAttr(attr_name);
      bool ok = attr != nullptr && attr->kind == "type";
      for (DataType type : allowed) {
        ok = ok && (attr->allowed_types.empty() ||
                    std::find(attr->allowed_types.begin(), attr->allowed_types.end(), type) !=
                        attr->allowed_types.end());
      }
      if (!ok) problems.bad_constraints.insert(def->DebugString());
    }
  }
  return problems;
}

// Two kernels of one op and device overlap when some node satisfies both: every attr both
// constrain has a type in both lists. The registry would silently pick the first.
bool Overlap(const KernelDef& a, const KernelDef& b) {
  for (const auto& [attr, a_types] : a.constraints()) {
    for (const auto& [b_attr, b_types] : b.constraints()) {
      if (attr != b_attr) continue;
      // clang 14 cannot capture a structured binding in a lambda: capture a plain reference.
      const auto& b_list = b_types;
      bool shared = std::any_of(a_types.begin(), a_types.end(), [&](DataType type) {
        return std::find(b_list.begin(), b_list.end(), type) != b_list.end();
      });
      if (!shared) return false;
    }
  }
  return true;
}

std::set<std::string> KernelClashes(const KernelRegistry& kernels) {
  std::vector<const KernelDef*> defs = kernels.KernelDefs();
  std::set<std::string> clashes;
  for (size_t i = 0; i < defs.size(); ++i) {
    for (size_t j = i + 1; j < defs.size(); ++j) {
      if (defs[i]->op() == defs[j]->op() && defs[i]->device_type() == defs[j]->device_type() &&
          Overlap(*defs[i], *defs[j])) {
        clashes.insert(StrCat(defs[i]->DebugString(), " vs. ", defs[j]->DebugString()));
      }
    }
  }
  return clashes;
}

TEST(RegistryCompletenessTest, EveryKernelServesARegisteredOpThroughItsTypeAttrs) {
  ASSERT_FALSE(kernels::AllKernels().KernelDefs().empty());
  KernelProblems problems = FindKernelProblems(kernels::AllKernels(), ops::AllOps());
  EXPECT_TRUE(problems.unknown_ops.empty())
      << "kernels registered for ops the OpRegistry lacks: " << Join(problems.unknown_ops);
  EXPECT_TRUE(problems.bad_constraints.empty())
      << "kernels constraining a type attr their op lacks, or a type it does not allow: "
      << Join(problems.bad_constraints);
}

TEST(RegistryCompletenessTest, NoTwoKernelsServeTheSameNode) {
  std::set<std::string> clashes = KernelClashes(kernels::AllKernels());
  EXPECT_TRUE(clashes.empty()) << "kernel registrations that serve the same nodes: "
                               << Join(clashes);
}

// The kernel checks themselves, on a small registry with one of each mistake.
TEST(RegistryCompletenessTest, KernelChecksFindEachKindOfMistake) {
  KernelFactory unused = [](OpKernelConstruction*) -> StatusOr<std::unique_ptr<OpKernel>> {
    return Internal("not built in this test");
  };
  KernelRegistry kernels;
  kernels.Register(KernelDef("NoSuchOp", "CPU"), unused);
  kernels.Register(KernelDef("Neg", "CPU").TypeConstraint<float>("T"), unused);
  kernels.Register(KernelDef("Neg", "CPU").TypeConstraint("T", {DataType::kDouble}), unused);
  kernels.Register(KernelDef("Neg", "CPU").TypeConstraint("T", {DataType::kBool}), unused);
  kernels.Register(KernelDef("Neg", "CPU").TypeConstraint("U", {DataType::kFloat}), unused);
  kernels.Register(KernelDef("Exp", "CPU").TypeConstraint<float>("T"), unused);
  kernels.Register(
      KernelDef("Exp", "CPU").TypeConstraint("T", {DataType::kFloat, DataType::kDouble}), unused);
  kernels.Register(KernelDef("Exp", "GPU").TypeConstraint<float>("T"), unused);

  KernelProblems problems = FindKernelProblems(kernels, ops::AllOps());
  EXPECT_EQ(problems.unknown_ops, std::set<std::string>{"NoSuchOp"});
  EXPECT_EQ(problems.bad_constraints.size(), 2u) << Join(problems.bad_constraints);  // bool, U
  std::set<std::string> clashes = KernelClashes(kernels);
  // Exp float vs. float/double on CPU; Neg's U-constrained kernel overlaps its T ones.
  EXPECT_TRUE(std::any_of(clashes.begin(), clashes.end(), [](const std::string& clash) {
    return clash.starts_with("Exp on CPU") && clash.find("GPU") == std::string::npos;
  })) << Join(clashes);
  for (const std::string& clash : clashes) {
    EXPECT_EQ(clash.find("GPU"), std::string::npos) << clash;
    EXPECT_EQ(clash.find("float32} vs. Neg on CPU with T in {float64"), std::string::npos) << clash;
  }
}

// One call of each ops:: builder, keyed by the op it must add. Inputs are placeholders of unknown
// shape (or literals where a builder needs a value), so only the dtypes have to be right.
using BuildFn = std::function<void(const Scope& s)>;

Output F(const Scope& s) { return ops::Placeholder(s, DataType::kFloat); }
Output I(const Scope& s) { return ops::Placeholder(s, DataType::kInt32); }
Output Handle(const Scope& s) { return ops::VarHandleOp(s, DataType::kFloat, PartialShape({2})); }

const std::vector<std::pair<std::string, BuildFn>>& BuilderTable() {
  static const auto* const table = new std::vector<std::pair<std::string, BuildFn>>{
      // array_ops.h
      {"Const", [](const Scope& s) { ops::Const(s, 1.0f); }},
      {"Placeholder", [](const Scope& s) { F(s); }},
      {"Identity", [](const Scope& s) { ops::Identity(s, F(s)); }},
      {"StopGradient", [](const Scope& s) { ops::StopGradient(s, F(s)); }},
      {"NoOp", [](const Scope& s) { ops::NoOp(s); }},
      {"Reshape", [](const Scope& s) { ops::Reshape(s, F(s), {-1}); }},
      {"Shape", [](const Scope& s) { ops::Shape(s, F(s)); }},
      {"Size", [](const Scope& s) { ops::Size(s, F(s)); }},
      {"Rank", [](const Scope& s) { ops::Rank(s, F(s)); }},
      {"ExpandDims", [](const Scope& s) { ops::ExpandDims(s, F(s), 0); }},
      {"Squeeze", [](const Scope& s) { ops::Squeeze(s, F(s)); }},
      {"Fill", [](const Scope& s) { ops::Fill(s, {2, 3}, 1.0f); }},
      {"ZerosLike", [](const Scope& s) { ops::ZerosLike(s, F(s)); }},
      {"OnesLike", [](const Scope& s) { ops::OnesLike(s, F(s)); }},
      {"Transpose", [](const Scope& s) { ops::Transpose(s, F(s), {1, 0}); }},
      {"ConcatV2", [](const Scope& s) { ops::Concat(s, {F(s), F(s)}, 0); }},
      {"Slice", [](const Scope& s) { ops::Slice(s, F(s), {0}, {1}); }},
      {"BroadcastTo", [](const Scope& s) { ops::BroadcastTo(s, F(s), {2, 3}); }},
      {"Tile", [](const Scope& s) { ops::Tile(s, F(s), {2}); }},
      {"GatherV2", [](const Scope& s) { ops::GatherV2(s, F(s), I(s), 0); }},
      {"UnsortedSegmentSum", [](const Scope& s) { ops::UnsortedSegmentSum(s, F(s), I(s), 3); }},
      {"DynamicPartition", [](const Scope& s) { ops::DynamicPartition(s, F(s), I(s), 2); }},
      {"DynamicStitch", [](const Scope& s) { ops::DynamicStitch(s, {I(s), I(s)}, {F(s), F(s)}); }},
      {"Range", [](const Scope& s) { ops::Range(s, 0, I(s), 1); }},
      {"MatrixBandPart", [](const Scope& s) { ops::MatrixBandPart(s, F(s), -1, 0); }},
      // collective_ops.h
      {"CollectiveAllReduce",
       [](const Scope& s) {
         ops::CollectiveAllReduce(s, {F(s)}, {.group_size = 2, .group_key = 1, .instance_key = 1});
       }},
      {"CollectiveBroadcastSend",
       [](const Scope& s) {
         ops::CollectiveBroadcastSend(s, F(s), {2}, {.group_size = 2, .instance_key = 2});
       }},
      {"CollectiveBroadcastRecv",
       [](const Scope& s) {
         ops::CollectiveBroadcastRecv(s, DataType::kFloat, {2}, {.group_size = 2, .instance_key = 2});
       }},
      {"CollectiveAllGather",
       [](const Scope& s) { ops::CollectiveAllGather(s, F(s), {.group_size = 2, .instance_key = 3}); }},
      // math_ops.h
      {"Add", [](const Scope& s) { ops::Add(s, F(s), F(s)); }},
      {"Sub", [](const Scope& s) { ops::Sub(s, F(s), F(s)); }},
      {"Mul", [](const Scope& s) { ops::Mul(s, F(s), F(s)); }},
      {"Div", [](const Scope& s) { ops::Div(s, F(s), F(s)); }},
      {"Maximum", [](const Scope& s) { ops::Maximum(s, F(s), F(s)); }},
      {"Minimum", [](const Scope& s) { ops::Minimum(s, F(s), F(s)); }},
      {"Equal", [](const Scope& s) { ops::Equal(s, F(s), F(s)); }},
      {"Less", [](const Scope& s) { ops::Less(s, F(s), F(s)); }},
      {"LessEqual", [](const Scope& s) { ops::LessEqual(s, F(s), F(s)); }},
      {"Greater", [](const Scope& s) { ops::Greater(s, F(s), F(s)); }},
      {"GreaterEqual", [](const Scope& s) { ops::GreaterEqual(s, F(s), F(s)); }},
      {"SelectV2",
       [](const Scope& s) {
         ops::SelectV2(s, ops::Placeholder(s, DataType::kBool), F(s), F(s));
       }},
      {"Neg", [](const Scope& s) { ops::Neg(s, F(s)); }},
      {"Square", [](const Scope& s) { ops::Square(s, F(s)); }},
      {"Sqrt", [](const Scope& s) { ops::Sqrt(s, F(s)); }},
      {"Exp", [](const Scope& s) { ops::Exp(s, F(s)); }},
      {"Log", [](const Scope& s) { ops::Log(s, F(s)); }},
      {"Reciprocal", [](const Scope& s) { ops::Reciprocal(s, F(s)); }},
      {"Abs", [](const Scope& s) { ops::Abs(s, F(s)); }},
      {"Sign", [](const Scope& s) { ops::Sign(s, F(s)); }},
      {"Rsqrt", [](const Scope& s) { ops::Rsqrt(s, F(s)); }},
      {"Log1p", [](const Scope& s) { ops::Log1p(s, F(s)); }},
      {"Erf", [](const Scope& s) { ops::Erf(s, F(s)); }},
      {"AddN", [](const Scope& s) { ops::AddN(s, {F(s), F(s)}); }},
      {"MatMul", [](const Scope& s) { ops::MatMul(s, F(s), F(s)); }},
      {"BatchMatMulV2", [](const Scope& s) { ops::BatchMatMul(s, F(s), F(s)); }},
      {"Sum", [](const Scope& s) { ops::Sum(s, F(s), 0); }},
      {"Mean", [](const Scope& s) { ops::Mean(s, F(s), 0); }},
      {"Max", [](const Scope& s) { ops::Max(s, F(s), 0); }},
      {"ArgMax", [](const Scope& s) { ops::ArgMax(s, F(s), 0); }},
      {"Cast", [](const Scope& s) { ops::Cast(s, F(s), DataType::kInt32); }},
      {"BroadcastGradientArgs", [](const Scope& s) { ops::BroadcastGradientArgs(s, I(s), I(s)); }},
      // nn_ops.h
      {"BiasAdd", [](const Scope& s) { ops::BiasAdd(s, F(s), F(s)); }},
      {"BiasAddGrad", [](const Scope& s) { ops::BiasAddGrad(s, F(s)); }},
      {"Relu", [](const Scope& s) { ops::Relu(s, F(s)); }},
      {"ReluGrad", [](const Scope& s) { ops::ReluGrad(s, F(s), F(s)); }},
      {"Sigmoid", [](const Scope& s) { ops::Sigmoid(s, F(s)); }},
      {"SigmoidGrad", [](const Scope& s) { ops::SigmoidGrad(s, F(s), F(s)); }},
      {"Tanh", [](const Scope& s) { ops::Tanh(s, F(s)); }},
      {"TanhGrad", [](const Scope& s) { ops::TanhGrad(s, F(s), F(s)); }},
      {"Softplus", [](const Scope& s) { ops::Softplus(s, F(s)); }},
      {"Gelu", [](const Scope& s) { ops::Gelu(s, F(s), {.approximate = true}); }},
      {"GeluGrad", [](const Scope& s) { ops::GeluGrad(s, F(s), F(s)); }},
      {"Softmax", [](const Scope& s) { ops::Softmax(s, F(s)); }},
      {"LogSoftmax", [](const Scope& s) { ops::LogSoftmax(s, F(s)); }},
      {"SparseSoftmaxCrossEntropyWithLogits",
       [](const Scope& s) {
         ops::SparseSoftmaxCrossEntropyWithLogits(s, F(s), ops::Placeholder(s, DataType::kInt64));
       }},
      {"FusedAttention",
       [](const Scope& s) { ops::FusedAttention(s, F(s), F(s), F(s), I(s), {.causal = true}); }},
      {"FusedAttentionGrad",
       [](const Scope& s) {
         ops::FusedAttentionGrad(s, F(s), F(s), F(s), I(s), F(s), F(s), F(s));
       }},
      {"FusedLayerNorm", [](const Scope& s) { ops::FusedLayerNorm(s, F(s), F(s), F(s)); }},
      {"FusedLayerNormGrad",
       [](const Scope& s) { ops::FusedLayerNormGrad(s, F(s), F(s), F(s), F(s), F(s)); }},
      {"Conv2D", [](const Scope& s) { ops::Conv2D(s, F(s), F(s), {1, 1, 1, 1}, "SAME"); }},
      {"Conv2DBackpropInput",
       [](const Scope& s) {
         ops::Conv2DBackpropInput(s, I(s), F(s), F(s), {1, 1, 1, 1}, "SAME");
       }},
      {"Conv2DBackpropFilter",
       [](const Scope& s) {
         ops::Conv2DBackpropFilter(s, F(s), I(s), F(s), {1, 1, 1, 1}, "SAME");
       }},
      {"MaxPool",
       [](const Scope& s) { ops::MaxPool(s, F(s), {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"); }},
      {"MaxPoolGrad",
       [](const Scope& s) {
         ops::MaxPoolGrad(s, F(s), F(s), F(s), {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
       }},
      {"AvgPool",
       [](const Scope& s) { ops::AvgPool(s, F(s), {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"); }},
      {"AvgPoolGrad",
       [](const Scope& s) {
         ops::AvgPoolGrad(s, I(s), F(s), {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
       }},
      // random_ops.h
      {"RandomUniform", [](const Scope& s) { ops::RandomUniform(s, {2, 3}, DataType::kFloat); }},
      {"RandomStandardNormal",
       [](const Scope& s) { ops::RandomStandardNormal(s, {2, 3}, DataType::kFloat); }},
      {"TruncatedNormal",
       [](const Scope& s) { ops::TruncatedNormal(s, {2, 3}, DataType::kFloat); }},
      // state_ops.h
      {"VarHandleOp", [](const Scope& s) { Handle(s); }},
      {"ReadVariableOp", [](const Scope& s) { ops::ReadVariableOp(s, Handle(s)); }},
      {"ResourceGather", [](const Scope& s) { ops::ResourceGather(s, Handle(s), I(s)); }},
      {"AssignVariableOp", [](const Scope& s) { ops::AssignVariableOp(s, Handle(s), F(s)); }},
      {"AssignAddVariableOp",
       [](const Scope& s) { ops::AssignAddVariableOp(s, Handle(s), F(s)); }},
      {"AssignSubVariableOp",
       [](const Scope& s) { ops::AssignSubVariableOp(s, Handle(s), F(s)); }},
      {"VarIsInitializedOp", [](const Scope& s) { ops::VarIsInitializedOp(s, Handle(s)); }},
      {"DestroyResourceOp", [](const Scope& s) { ops::DestroyResourceOp(s, Handle(s)); }},
      // io_ops.h
      {"SaveV2", [](const Scope& s) { ops::SaveV2(s, ops::PathTensor("/tmp"), {"x"}, "a", {F(s)}); }},
      {"RestoreV2",
       [](const Scope& s) {
         ops::RestoreV2(s, ops::PathTensor("/tmp"), {"x"}, {DataType::kFloat}, {TensorShape({2})});
       }},
      // training_ops.h
      {"ResourceApplyGradientDescent",
       [](const Scope& s) { ops::ResourceApplyGradientDescent(s, Handle(s), 0.1f, F(s)); }},
      {"ResourceApplyMomentum",
       [](const Scope& s) {
         ops::ResourceApplyMomentum(s, Handle(s), Handle(s), 0.1f, F(s), 0.9f);
       }},
      {"ResourceApplyAdagradV2",
       [](const Scope& s) { ops::ResourceApplyAdagradV2(s, Handle(s), Handle(s), 0.1f, 1e-7f, F(s)); }},
      {"ResourceSparseApplyGradientDescent",
       [](const Scope& s) {
         ops::ResourceSparseApplyGradientDescent(s, Handle(s), 0.1f, F(s), I(s));
       }},
      {"ResourceSparseApplyAdagradV2",
       [](const Scope& s) {
         ops::ResourceSparseApplyAdagradV2(s, Handle(s), Handle(s), 0.1f, 1e-7f, F(s), I(s));
       }},
      {"ResourceSparseApplyAdam",
       [](const Scope& s) {
         ops::ResourceSparseApplyAdam(s, Handle(s), Handle(s), Handle(s), 0.9f, 0.999f, 0.1f, 0.9f,
                                      0.999f, 1e-7f, F(s), I(s));
       }},
      {"ResourceApplyAdam",
       [](const Scope& s) {
         ops::ResourceApplyAdam(s, Handle(s), Handle(s), Handle(s), 0.9f, 0.999f, 0.1f, 0.9f,
                                0.999f, 1e-7f, F(s));
       }},
      {"ResourceApplyAdamW",
       [](const Scope& s) {
         ops::ResourceApplyAdamW(s, Handle(s), Handle(s), Handle(s), 0.9f, 0.999f, 0.1f, 0.9f,
                                 0.999f, 1e-7f, 0.1f, F(s));
       }},
  };
  return *table;
}

// The ops of the nodes each table entry builds, across all entries.
std::set<std::string> BuiltOps() {
  std::set<std::string> built;
  for (const auto& [op, build] : BuilderTable()) {
    Scope root = Scope::NewRootScope();
    build(root);
    for (Node* node : root.graph()->nodes()) built.insert(node->type_string());
  }
  return built;
}

TEST(RegistryCompletenessTest, EveryBuilderInTheTableBuildsItsOp) {
  std::set<std::string> seen;
  for (const auto& [op, build] : BuilderTable()) {
    EXPECT_TRUE(seen.insert(op).second) << "the builder table lists " << op << " twice";
    EXPECT_TRUE(ops::AllOps().LookUp(op).ok()) << "the builder table lists unknown op " << op;
    Scope root = Scope::NewRootScope();
    build(root);
    EXPECT_TRUE(root.ok()) << "the builder of " << op << " failed: " << root.status();
    std::vector<Node*> nodes = root.graph()->nodes();
    const std::string& op_name = op;  // clang 14 cannot capture a structured binding
    EXPECT_TRUE(std::any_of(nodes.begin(), nodes.end(),
                            [&](Node* node) { return node->type_string() == op_name; }))
        << "the builder listed for " << op << " added no node of that op";
  }
}

TEST(RegistryCompletenessTest, EveryUserFacingOpHasABuilder) {
  std::set<std::string> covered = BuiltOps();
  std::set<std::string> internal = InternalOps();
  covered.insert(internal.begin(), internal.end());
  std::set<std::string> missing;
  for (const std::string& op : ops::AllOps().OpNames()) {
    if (!covered.contains(op)) missing.insert(op);
  }
  EXPECT_TRUE(missing.empty())
      << "ops without a builder: " << Join(missing)
      << ". Add a builder to src/weft/graph/builder/ops/ (and a line to this test's table), or, "
         "if only Weft itself creates the op, mark it SetIsInternal() in its OpDef";
}

TEST(RegistryCompletenessTest, EveryGradientRegistrationNamesARegisteredOp) {
  std::set<std::string> unknown;
  for (const std::string& op : AllGradients().OpNames()) {
    if (!ops::AllOps().LookUp(op).ok()) unknown.insert(op);
  }
  EXPECT_TRUE(unknown.empty()) << "gradient registrations for ops the OpRegistry lacks: "
                               << Join(unknown);
}

// A registered gradient, RegisterNoGradient or RegisterNotDifferentiable all count as a decision;
// only NotFound is an omission.
TEST(RegistryCompletenessTest, EveryDifferentiableOpHasAGradientDecision) {
  std::set<std::string> missing;
  for (const std::string& name : ops::AllOps().OpNames()) {
    const OpDef& op = **ops::AllOps().LookUp(name);
    if (op.is_internal || !CanOutputFloat(op)) continue;
    if (IsNotFound(AllGradients().Lookup(name).status())) missing.insert(name);
  }
  EXPECT_TRUE(missing.empty())
      << "ops with a float output but no gradient decision: " << Join(missing)
      << ". Register a gradient function in src/weft/graph/gradients/ (with a numeric check), "
         "or RegisterNoGradient / RegisterNotDifferentiable with the reason";
}

}  // namespace
}  // namespace weft
