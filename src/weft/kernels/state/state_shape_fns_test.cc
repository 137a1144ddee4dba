// Shape functions of the state, random and training ops, run directly on partial shapes (the
// kernel tests only see fully known inputs).
#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::kernels::state {
namespace {

struct Inferred {
  Status status;
  std::vector<PartialShape> outputs;
};

Inferred Infer(const std::string& op_name, std::vector<PartialShape> inputs,
               std::map<std::string, proto::AttrValue> attrs = {},
               std::vector<const Tensor*> values = {}) {
  const OpDef* op = *ops::AllOps().LookUp(op_name);
  proto::NodeDef node;
  node.set_name("n");
  node.set_op(op_name);
  for (auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  AddDefaultsToNodeDef(*op, &node);
  InferenceContext context(node, *op, std::move(inputs), std::move(values),
                           static_cast<int>(op->outputs.size()));
  Inferred result;
  result.status = op->shape_fn(context);
  result.outputs = context.outputs();
  return result;
}

TEST(StateShapeFnTest, VariableOps) {
  auto handle = Infer(
      "VarHandleOp", {},
      {{"dtype", MakeAttrValue(DataType::kFloat)}, {"shape", MakeAttrValue(PartialShape({2, 3}))}});
  ASSERT_TRUE(handle.status.ok()) << handle.status;
  EXPECT_EQ(handle.outputs[0], PartialShape({}));

  auto read =
      Infer("ReadVariableOp", {PartialShape({})}, {{"dtype", MakeAttrValue(DataType::kFloat)}});
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_FALSE(read.outputs[0].rank_known());

  auto bad =
      Infer("ReadVariableOp", {PartialShape({2})}, {{"dtype", MakeAttrValue(DataType::kFloat)}});
  EXPECT_TRUE(IsInvalidArgument(bad.status)) << bad.status;
  EXPECT_NE(bad.status.message().find("node 'n'"), std::string::npos) << bad.status;

  EXPECT_TRUE(Infer("AssignVariableOp", {PartialShape(), PartialShape({4})},
                    {{"dtype", MakeAttrValue(DataType::kFloat)}})
                  .status.ok());
  auto initialized = Infer("VarIsInitializedOp", {PartialShape({})});
  EXPECT_EQ(initialized.outputs[0], PartialShape({}));
}

TEST(StateShapeFnTest, RandomOpsUseTheShapeInput) {
  std::map<std::string, proto::AttrValue> attrs = {{"dtype", MakeAttrValue(DataType::kFloat)},
                                                   {"T", MakeAttrValue(DataType::kInt32)}};
  Tensor dims = Tensor::FromVector<int32_t>({3, 4});
  auto known = Infer("RandomUniform", {PartialShape({2})}, attrs, {&dims});
  ASSERT_TRUE(known.status.ok()) << known.status;
  EXPECT_EQ(known.outputs[0], PartialShape({3, 4}));

  auto rank_only = Infer("TruncatedNormal", {PartialShape({3})}, attrs);
  EXPECT_EQ(rank_only.outputs[0], PartialShape({-1, -1, -1}));
  auto unknown = Infer("RandomStandardNormal", {PartialShape()}, attrs);
  EXPECT_FALSE(unknown.outputs[0].rank_known());

  Tensor negative = Tensor::FromVector<int32_t>({3, -4});
  auto bad = Infer("RandomUniform", {PartialShape({2})}, attrs, {&negative});
  EXPECT_TRUE(IsInvalidArgument(bad.status)) << bad.status;
  EXPECT_TRUE(IsInvalidArgument(Infer("RandomUniform", {PartialShape({2, 2})}, attrs).status));
}

TEST(StateShapeFnTest, TrainingOpsWantScalarHyperparameters) {
  std::map<std::string, proto::AttrValue> attrs = {{"T", MakeAttrValue(DataType::kFloat)}};
  EXPECT_TRUE(Infer("ResourceApplyMomentum",
                    {PartialShape({}), PartialShape({}), PartialShape({}), PartialShape({5, 5}),
                     PartialShape()},
                    attrs)
                  .status.ok());
  auto bad_lr = Infer(
      "ResourceApplyMomentum",
      {PartialShape({}), PartialShape({}), PartialShape({2}), PartialShape({5}), PartialShape({})},
      attrs);
  EXPECT_TRUE(IsInvalidArgument(bad_lr.status)) << bad_lr.status;
  EXPECT_NE(bad_lr.status.message().find("node 'n' (ResourceApplyMomentum)"), std::string::npos)
      << bad_lr.status;
  std::vector<PartialShape> adam(10, PartialShape({}));
  adam[9] = PartialShape({7, 3});
  EXPECT_TRUE(Infer("ResourceApplyAdam", adam, attrs).status.ok());
  adam[0] = PartialShape({1});
  EXPECT_TRUE(IsInvalidArgument(Infer("ResourceApplyAdam", adam, attrs).status));
  EXPECT_TRUE(Infer("ResourceApplyGradientDescent",
                    {PartialShape({}), PartialShape({}), PartialShape({9})}, attrs)
                  .status.ok());
}

}  // namespace
}  // namespace weft::kernels::state
