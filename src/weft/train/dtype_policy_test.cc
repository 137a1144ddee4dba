// The mixed_bfloat16 dtype policy: the layers' products and convolutions run in bfloat16 (the
// graph says so), variables and outputs stay float32, training follows float32 within bfloat16's
// rounding, and an op without a bfloat16 kernel is named.
#include "weft/train/dtype_policy.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/train/layers/convolutional.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;
using train::testing::Classes;
using train::testing::ImageClasses;

DTypePolicy Policy(std::string_view name) {
  auto policy = DTypePolicy::FromName(name);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.ok() ? *policy : DTypePolicy{};
}

TEST(DTypePolicyTest, KnowsTheReferencesNames) {
  EXPECT_EQ(Policy("float32").compute_dtype, DataType::kFloat);
  const DTypePolicy mixed = Policy("mixed_bfloat16");
  EXPECT_EQ(mixed.compute_dtype, DataType::kBFloat16);
  EXPECT_EQ(mixed.variable_dtype, DataType::kFloat);
  auto unknown = DTypePolicy::FromName("mixed_float8");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("'mixed_float8'"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("mixed_bfloat16"));
}

// The types of the model's nodes of `op_types` (their outputs'), read from its graph.
std::vector<DataType> OutputTypes(Model& model, const std::set<std::string>& op_types) {
  std::vector<DataType> types;
  Status added = model.AddToGraph([&](const Scope& root) {
    for (const Node* node : root.graph()->nodes()) {
      if (op_types.count(node->type_string()) != 0) types.push_back(node->output_type(0));
    }
    return Status::OK();
  });
  EXPECT_TRUE(added.ok()) << added;
  return types;
}

std::vector<DataType> MatMulTypes(Model& model) { return OutputTypes(model, {"MatMul"}); }

struct Trained {
  std::vector<double> losses;
  std::vector<DataType> matmul_types;
  std::vector<DataType> variable_types;
};

// A seeded classifier trained for 3 epochs under `policy`.
Trained Train(std::string_view policy) {
  Sequential model(Dense(32, "relu"), Dense(10));
  Status compiled = model.Compile(NewAdamOptimizer(0.01), SparseCategoricalCrossentropy(true), {},
                                  {.seed = 7, .dtype_policy = Policy(policy)});
  EXPECT_TRUE(compiled.ok()) << compiled;
  auto history = model.Fit(Classes(256, 32), {.epochs = 3});
  EXPECT_TRUE(history.ok()) << history.status();
  Trained trained;
  if (!history.ok()) return trained;
  for (const Logs& logs : history->epochs) trained.losses.push_back(logs.at("loss"));
  trained.matmul_types = MatMulTypes(model);
  for (const Variable& v : model.variables()) trained.variable_types.push_back(v.dtype());
  return trained;
}

TEST(DTypePolicyTest, MixedBFloat16MultipliesInBFloat16AndKeepsVariablesInFloat32) {
  const Trained full = Train("float32");
  const Trained mixed = Train("mixed_bfloat16");
  ASSERT_EQ(full.losses.size(), 3u);
  ASSERT_EQ(mixed.losses.size(), 3u);
  // Forward products and their gradients: every MatMul of the model.
  EXPECT_THAT(full.matmul_types, ::testing::Each(DataType::kFloat));
  ASSERT_FALSE(mixed.matmul_types.empty());
  EXPECT_THAT(mixed.matmul_types, ::testing::Each(DataType::kBFloat16));
  EXPECT_THAT(mixed.variable_types, ::testing::Each(DataType::kFloat));
  // Rounded products, so not the same run; the same training within bfloat16's rounding.
  EXPECT_NE(mixed.losses, full.losses);
  for (size_t i = 0; i < full.losses.size(); ++i) {
    EXPECT_NEAR(mixed.losses[i], full.losses[i], 0.03 * full.losses[i]) << "epoch " << i;
  }
  EXPECT_LT(mixed.losses.back(), mixed.losses.front());
}

TEST(DTypePolicyTest, MixedBFloat16ConvolvesInBFloat16) {
  auto train = [](std::string_view policy, std::vector<DataType>* conv_types) {
    Sequential model(Conv2D(8, 3, "relu"), Flatten(), Dense(10));
    Status compiled = model.Compile(NewAdamOptimizer(0.01), SparseCategoricalCrossentropy(true), {},
                                    {.seed = 3, .dtype_policy = Policy(policy)});
    EXPECT_TRUE(compiled.ok()) << compiled;
    auto history = model.Fit(ImageClasses(256, 32), {.epochs = 3});
    EXPECT_TRUE(history.ok()) << history.status();
    std::vector<double> losses;
    if (!history.ok()) return losses;
    for (const Logs& logs : history->epochs) losses.push_back(logs.at("loss"));
    *conv_types = OutputTypes(model, {"Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput"});
    for (const Variable& v : model.variables()) EXPECT_EQ(v.dtype(), DataType::kFloat);
    return losses;
  };
  std::vector<DataType> full_types, mixed_types;
  const std::vector<double> full = train("float32", &full_types);
  const std::vector<double> mixed = train("mixed_bfloat16", &mixed_types);
  ASSERT_EQ(full.size(), 3u);
  ASSERT_EQ(mixed.size(), 3u);
  EXPECT_THAT(full_types, ::testing::Each(DataType::kFloat));
  // The forward convolution and its filter gradient (the input's is not needed).
  ASSERT_GE(mixed_types.size(), 2u);
  EXPECT_THAT(mixed_types, ::testing::Each(DataType::kBFloat16));
  EXPECT_NE(mixed, full);
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_NEAR(mixed[i], full[i], 0.03 * full[i]) << "epoch " << i;
  }
  EXPECT_LT(mixed.back(), mixed.front());
}

TEST(DTypePolicyTest, PredictionsOfAMixedModelAreFloat32) {
  Sequential model(Dense(8, "relu"), Dense(3));
  ASSERT_TRUE(model
                  .Compile(NewGradientDescentOptimizer(0.1), SparseCategoricalCrossentropy(true),
                           {}, {.seed = 1, .dtype_policy = Policy("mixed_bfloat16")})
                  .ok());
  auto predictions = model.Predict(Classes(4, 4));
  ASSERT_TRUE(predictions.ok()) << predictions.status();
  EXPECT_EQ(predictions->dtype(), DataType::kFloat);
  EXPECT_EQ(predictions->shape(), TensorShape({4, 3}));
}

TEST(DTypePolicyTest, AnOpWithoutABFloat16KernelIsNamed) {
  // A custom model step that hands a bfloat16 tensor to Softmax, which has no bfloat16 kernel.
  Model model([](const Scope& scope, const Output& input) {
    return ops::Softmax(scope.NewSubScope("probabilities"),
                        ops::Cast(scope, input, DataType::kBFloat16));
  });
  ASSERT_TRUE(model
                  .Compile(NewGradientDescentOptimizer(0.1), SparseCategoricalCrossentropy(false),
                           {}, {.dtype_policy = Policy("mixed_bfloat16")})
                  .ok());
  auto history = model.Fit(Classes(64, 32), {.epochs = 1});
  ASSERT_FALSE(history.ok());
  EXPECT_THAT(history.status().message(), HasSubstr("Softmax"));
  EXPECT_THAT(history.status().message(), HasSubstr("bfloat16"));
}

}  // namespace
}  // namespace weft::train
