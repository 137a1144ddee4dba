#include "weft/train/models.h"

#include <gtest/gtest.h>

#include "weft/runtime/session.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::train {
namespace {

std::vector<Tensor> InitialValues(ModelKind kind, int64_t seed) {
  Scope root = Scope::NewRootScope();
  auto model = BuildModel(root, kind, seed);
  EXPECT_TRUE(model.ok()) << model.status();
  std::vector<std::string> targets, fetches;
  for (const Output& init : model->initializers) targets.push_back(init.name());
  for (const Variable& v : model->variables) fetches.push_back(v.Read(root).name());
  auto session = NewSession(SessionOptions()).value();
  EXPECT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  EXPECT_TRUE(session->Run({}, {}, targets, &outputs).ok());
  Status s = session->Run({}, fetches, {}, &outputs);
  EXPECT_TRUE(s.ok()) << s;
  return outputs;
}

TEST(ModelsTest, MlpHasTheStandardShape) {
  Scope root = Scope::NewRootScope();
  auto model = BuildModel(root, ModelKind::kMlp, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->variables.size(), 6u);
  EXPECT_EQ(model->variables[0].shape(), TensorShape({784, 256}));
  EXPECT_EQ(model->variables[2].shape(), TensorShape({256, 256}));
  EXPECT_EQ(model->variables[4].shape(), TensorShape({256, 10}));
  EXPECT_EQ(model->loss.dtype(), DataType::kFloat);
  EXPECT_EQ(model->correct.dtype(), DataType::kInt64);
}

TEST(ModelsTest, CnnHasTheStandardShape) {
  Scope root = Scope::NewRootScope();
  auto model = BuildModel(root, ModelKind::kCnn, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->variables.size(), 8u);
  EXPECT_EQ(model->variables[0].shape(), TensorShape({5, 5, 1, 32}));
  EXPECT_EQ(model->variables[2].shape(), TensorShape({5, 5, 32, 64}));
  EXPECT_EQ(model->variables[4].shape(), TensorShape({3136, 1024}));
}

TEST(ModelsTest, TheSameSeedGivesTheSameInitialValues) {
  std::vector<Tensor> a = InitialValues(ModelKind::kMlp, 5);
  std::vector<Tensor> b = InitialValues(ModelKind::kMlp, 5);
  std::vector<Tensor> c = InitialValues(ModelKind::kMlp, 6);
  ASSERT_EQ(a.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TENSOR_EQ(a[i], b[i]);
  EXPECT_FALSE(::weft::testing::TensorEqual(a[0], c[0]));
  // Glorot-uniform limit for [784, 256] is sqrt(6 / 1040) ~ 0.076.
  for (float v : a[0].flat<float>()) ASSERT_LE(std::abs(v), 0.0760f);
}

TEST(ModelsTest, AFactoryMakesEveryVariableWithTheSeededInitializers) {
  struct Call {
    std::string name;
    TensorShape shape;
  };
  std::vector<Call> calls;
  Scope root = Scope::NewRootScope();
  VariableFactory factory = [&](const Scope& scope, std::string_view name, const TensorShape& shape,
                                const Initializer& initializer) -> StatusOr<Variable> {
    calls.push_back({std::string(name), shape});
    return Variable::Create(scope.WithDevice("/cpu:0"), name, shape, DataType::kFloat, initializer);
  };
  auto model = BuildModel(root, ModelKind::kMlp, 5, factory);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls[0].name, "kernel");
  EXPECT_EQ(calls[0].shape, TensorShape({784, 256}));
  EXPECT_EQ(calls[1].name, "bias");
  EXPECT_EQ(calls[5].shape, TensorShape({10}));
  ASSERT_EQ(model->variables.size(), 6u);
  EXPECT_EQ(model->variables[0].name(), "dense1/kernel");  // the same names as without a factory
  EXPECT_EQ(model->variables[0].handle().node()->requested_device(), "/cpu:0");
  EXPECT_TRUE(model->initializers.empty());  // the factory's owner initializes

  // The same initial values as the default path: the initializers carry the same seeds.
  std::vector<std::string> targets, fetches;
  for (const Variable& v : model->variables) {
    targets.push_back(v.initializer().name());
    fetches.push_back(v.Read(root).name());
  }
  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, targets, &outputs).ok());
  ASSERT_TRUE(session->Run({}, fetches, {}, &outputs).ok());
  std::vector<Tensor> expected = InitialValues(ModelKind::kMlp, 5);
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_TENSOR_EQ(outputs[i], expected[i]);
}

TEST(ModelsTest, AFactoryErrorFailsTheBuildNamingTheVariable) {
  Scope root = Scope::NewRootScope();
  int calls = 0;
  VariableFactory factory = [&](const Scope& scope, std::string_view name, const TensorShape& shape,
                                const Initializer& initializer) -> StatusOr<Variable> {
    if (++calls == 2) return InvalidArgument("no room for ", name);
    return Variable::Create(scope, name, shape, DataType::kFloat, initializer);
  };
  Status s = BuildModel(root, ModelKind::kCnn, 1, factory).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("no room for bias"), std::string::npos) << s;
  EXPECT_EQ(calls, 2);  // nothing more is built after the first error
}

TEST(ModelsTest, UnknownModelNameIsRefused) {
  Status s = ParseModelKind("transformer").status();
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("transformer"), std::string::npos);
}

}  // namespace
}  // namespace weft::train
