#include "weft/graph/builder/variable.h"

#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/runtime/session.h"

namespace weft {
namespace {

std::unique_ptr<Session> MakeSession(const Scope& root) {
  StatusOr<proto::GraphDef> graph = root.ToGraphDef();
  EXPECT_TRUE(graph.ok()) << graph.status();
  StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions());
  EXPECT_TRUE(session.ok()) << session.status();
  Status created = (*session)->Create(*graph);
  EXPECT_TRUE(created.ok()) << created;
  return std::move(session).value();
}

Status RunTarget(Session& session, const Output& target, const NamedTensorList& feeds = {}) {
  std::vector<Tensor> outputs;
  return session.Run(feeds, {}, {target.node()->name()}, &outputs);
}

StatusOr<Tensor> Fetch(Session& session, const Output& output) {
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(session.Run({}, {output.name()}, {}, &outputs));
  return outputs[0];
}

TEST(VariableTest, NamesFollowTheScope) {
  Scope root = Scope::NewRootScope();
  Scope dense = root.NewSubScope("dense");
  Variable w =
      Variable::Create(dense, "w", TensorShape({3, 4}), DataType::kFloat, Initializer::Zeros());
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(w.name(), "dense/w");
  EXPECT_EQ(w.handle().node()->name(), "dense/w");
  EXPECT_EQ(w.handle().node()->type_string(), "VarHandleOp");
  EXPECT_EQ(w.initializer().node()->name(), "dense/w/Assign");
  EXPECT_EQ(w.initializer().node()->type_string(), "AssignVariableOp");
  EXPECT_EQ(w.dtype(), DataType::kFloat);
  EXPECT_EQ(w.shape(), TensorShape({3, 4}));
  PartialShape declared;
  ASSERT_TRUE(GetNodeAttr(w.handle().node()->def(), "shape", &declared).ok());
  EXPECT_EQ(declared, PartialShape({3, 4}));
  const Node* value = w.initializer().node()->input_edge(1)->src;
  EXPECT_EQ(value->name().rfind("dense/w/Initializer/", 0), 0u) << value->name();

  // A second variable of the same name is made unique, and so are its nodes.
  Variable again =
      Variable::Create(dense, "w", TensorShape({2}), DataType::kFloat, Initializer::Ones());
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(again.name(), "dense/w_1");
  EXPECT_EQ(again.initializer().node()->name(), "dense/w_1/Assign");

  Output read = w.Read(dense);
  EXPECT_EQ(read.dtype(), DataType::kFloat);
  EXPECT_EQ(read.node()->type_string(), "ReadVariableOp");
}

TEST(VariableTest, CreateFromValueAssignsThatValue) {
  Scope root = Scope::NewRootScope();
  auto value = ops::Const(root.WithOpName("start"), {1.5f, -2.0f, 4.0f});
  Variable v = Variable::CreateFromValue(root, "copy", value);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(v.name(), "copy");
  EXPECT_EQ(v.initializer().node()->name(), "copy/Assign");
  EXPECT_EQ(v.shape(), TensorShape({3}));
  EXPECT_EQ(v.initializer().node()->input_edge(1)->src, value.node());
  Output read = v.Read(root);
  auto session = MakeSession(root);
  ASSERT_TRUE(RunTarget(*session, v.initializer()).ok());
  StatusOr<Tensor> got = Fetch(*session, read);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data<float>()[2], 4.0f);

  // The shape must be known: a placeholder of unknown length cannot make a variable.
  Scope other = Scope::NewRootScope();
  auto unknown = ops::Placeholder(other, DataType::kFloat, PartialShape({-1}));
  Variable bad = Variable::CreateFromValue(other, "bad", unknown);
  EXPECT_FALSE(bad);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("'bad'"), std::string::npos) << other.status();
  EXPECT_NE(other.status().message().find("not fully known"), std::string::npos);
}

TEST(VariableTest, Fans) {
  EXPECT_EQ(Initializer::Fans(TensorShape({784, 256})), std::make_pair(int64_t{784}, int64_t{256}));
  EXPECT_EQ(Initializer::Fans(TensorShape({5, 5, 32, 64})),
            std::make_pair(int64_t{800}, int64_t{1600}));
  EXPECT_EQ(Initializer::Fans(TensorShape({10})), std::make_pair(int64_t{10}, int64_t{10}));
  EXPECT_EQ(Initializer::Fans(TensorShape()), std::make_pair(int64_t{1}, int64_t{1}));
}

TEST(VariableTest, OpsOnAVariableFollowItsDevice) {
  Scope root = Scope::NewRootScope();
  Variable w = Variable::Create(root.WithDevice("/device:CPU:0"), "w", TensorShape({2}),
                                DataType::kFloat, Initializer::Zeros());
  Variable accum =
      Variable::Create(root, "accum", TensorShape({2}), DataType::kFloat, Initializer::Zeros());
  Output read = w.Read(root);
  Output add = w.AssignAdd(root, ops::Const(root, {1.0f, 2.0f}));
  Output step = ops::ResourceApplyMomentum(root, w.handle(), accum.handle(), 0.1,
                                           ops::Const(root, {1.0f, 1.0f}), 0.9);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(w.initializer().node()->requested_device(), "/device:CPU:0");
  EXPECT_EQ(read.node()->requested_device(), "/device:CPU:0");
  EXPECT_EQ(add.node()->requested_device(), "/device:CPU:0");
  EXPECT_EQ(step.node()->requested_device(), "/device:CPU:0");
  EXPECT_EQ(accum.Read(root).node()->requested_device(), "");
}

TEST(VariableTest, RandomInitializerOfAnIntVariableIsAnError) {
  Scope root = Scope::NewRootScope();
  Variable v = Variable::Create(root, "v", TensorShape({2}), DataType::kInt32,
                                Initializer::GlorotUniform(1));
  EXPECT_FALSE(v);
  EXPECT_TRUE(IsInvalidArgument(root.status())) << root.status();
  EXPECT_NE(root.status().message().find("int32"), std::string::npos) << root.status();
}

TEST(VariableTest, GlorotUniformIsSeededAndInRange) {
  auto build = [](int64_t seed, Output* read) {
    Scope root = Scope::NewRootScope();
    Variable w = Variable::Create(root, "w", TensorShape({20, 30}), DataType::kFloat,
                                  Initializer::GlorotUniform(seed));
    *read = w.Read(root);
    return std::make_pair(root, w);
  };
  auto run = [](const Scope& root, const Variable& w, const Output& read) {
    std::unique_ptr<Session> session = MakeSession(root);
    Status init = RunTarget(*session, w.initializer());
    EXPECT_TRUE(init.ok()) << init;
    StatusOr<Tensor> value = Fetch(*session, read);
    EXPECT_TRUE(value.ok()) << value.status();
    return value.ok() ? *value : Tensor();
  };
  Output read;
  auto [root, w] = build(7, &read);
  ASSERT_TRUE(root.ok()) << root.status();
  Tensor first = run(root, w, read);
  Tensor second = run(root, w, read);  // another session, same graph
  ASSERT_EQ(first.shape(), TensorShape({20, 30}));
  const float limit = std::sqrt(6.0f / 50.0f);
  float lo = 1, hi = -1;
  for (float x : first.flat<float>()) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  EXPECT_GE(lo, -limit);
  EXPECT_LT(hi, limit);
  EXPECT_LT(lo, -0.8f * limit);  // 600 draws spread over the range
  EXPECT_GT(hi, 0.8f * limit);
  EXPECT_EQ(std::memcmp(first.raw_data(), second.raw_data(), first.TotalBytes()), 0);

  Output other_read;
  auto [other_root, other_w] = build(8, &other_read);
  Tensor other = run(other_root, other_w, other_read);
  EXPECT_NE(std::memcmp(first.raw_data(), other.raw_data(), first.TotalBytes()), 0);
}

TEST(VariableTest, ReadBeforeInitializationNamesTheVariable) {
  Scope root = Scope::NewRootScope();
  Variable w = Variable::Create(root.NewSubScope("dense"), "w", TensorShape({2}), DataType::kFloat,
                                Initializer::Zeros());
  Output read = w.Read(root);
  std::unique_ptr<Session> session = MakeSession(root);
  Status status = Fetch(*session, read).status();
  EXPECT_TRUE(IsFailedPrecondition(status)) << status;
  EXPECT_NE(status.message().find("variable 'dense/w' is not initialized"), std::string::npos)
      << status;
}

TEST(VariableTest, ThreeMomentumStepsThroughASession) {
  Scope root = Scope::NewRootScope();
  Variable w =
      Variable::Create(root, "w", TensorShape({2}), DataType::kDouble, Initializer::Constant(1.0));
  Variable accum = Variable::Create(root, "w_momentum", TensorShape({2}), DataType::kDouble,
                                    Initializer::Zeros());
  Output grad = ops::Placeholder(root.WithOpName("grad"), DataType::kDouble, PartialShape({2}));
  Output step = ops::ResourceApplyMomentum(root.WithOpName("step"), w.handle(), accum.handle(), 0.1,
                                           grad, 0.9);
  Output read = w.Read(root);
  Output init = ops::NoOp(
      root.WithOpName("init").WithControlDependencies({w.initializer(), accum.initializer()}));
  ASSERT_TRUE(root.ok()) << root.status();
  std::unique_ptr<Session> session = MakeSession(root);
  ASSERT_TRUE(RunTarget(*session, init).ok());

  // Hand-computed: accum = 0.9 * accum + g; w -= 0.1 * accum.
  const std::vector<std::vector<double>> grads = {{1, 0.5}, {2, -1}, {-1, 0.25}};
  const std::vector<std::vector<double>> want = {{0.9, 0.95}, {0.61, 1.005}, {0.449, 1.0295}};
  for (int i = 0; i < 3; ++i) {
    Status status = RunTarget(*session, step, {{"grad", Tensor::FromVector(grads[i])}});
    ASSERT_TRUE(status.ok()) << status;
    StatusOr<Tensor> value = Fetch(*session, read);
    ASSERT_TRUE(value.ok()) << value.status();
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(value->data<double>()[j], want[i][j], 1e-12);
  }
}

TEST(VariableTest, IntegerCountersAndAssign) {
  Scope root = Scope::NewRootScope();
  Variable counter =
      Variable::Create(root, "global_step", TensorShape(), DataType::kInt64, Initializer::Zeros());
  Output increment = counter.AssignAdd(root, 1);  // the literal becomes int64
  Variable bias =
      Variable::Create(root, "b", TensorShape({3}), DataType::kInt32, Initializer::Constant(4));
  Output reset = bias.Assign(root, ops::Const(root, {1, 2, 3}));
  Output count = counter.Read(root);
  Output bias_value = bias.Read(root);
  ASSERT_TRUE(root.ok()) << root.status();
  std::unique_ptr<Session> session = MakeSession(root);
  ASSERT_TRUE(RunTarget(*session, counter.initializer()).ok());
  ASSERT_TRUE(RunTarget(*session, bias.initializer()).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunTarget(*session, increment).ok());
  EXPECT_EQ(Fetch(*session, count)->data<int64_t>()[0], 3);
  Tensor b = *Fetch(*session, bias_value);
  EXPECT_EQ(std::vector<int32_t>(b.flat<int32_t>().begin(), b.flat<int32_t>().end()),
            std::vector<int32_t>({4, 4, 4}));
  ASSERT_TRUE(RunTarget(*session, reset).ok());
  b = *Fetch(*session, bias_value);
  EXPECT_EQ(std::vector<int32_t>(b.flat<int32_t>().begin(), b.flat<int32_t>().end()),
            std::vector<int32_t>({1, 2, 3}));
}

// A creator that records its calls under `tag` and builds the variable as "<name>_<tag>" through
// Variable::Create (so the next creator out, or the plain builder, makes it).
VariableCreator Renaming(std::string tag, std::vector<std::string>* calls) {
  return
      [tag, calls](const Scope& scope, std::string_view name, const TensorShape& shape,
                   DataType dtype, const Initializer& initializer, const VariableOptions& options) {
        calls->push_back(StrCat(tag, ":", name));
        return Variable::Create(scope, StrCat(name, "_", tag), shape, dtype, initializer, options);
      };
}

TEST(VariableCreatorTest, CreatorsNestInnermostFirstAndDoNotReenterThemselves) {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> calls;
  EXPECT_TRUE(VariableCreatorScope::CurrentCreators().empty());
  {
    VariableCreatorScope outer(Renaming("outer", &calls));
    {
      VariableCreatorScope inner(Renaming("inner", &calls));
      EXPECT_EQ(VariableCreatorScope::CurrentCreators().size(), 2u);
      Variable v =
          Variable::Create(root, "v", TensorShape({2}), DataType::kFloat, Initializer::Ones());
      ASSERT_TRUE(v);
      EXPECT_EQ(v.name(), "v_inner_outer");
      EXPECT_EQ(calls, (std::vector<std::string>{"inner:v", "outer:v_inner"}));
      // Both creators are back after the call.
      EXPECT_EQ(VariableCreatorScope::CurrentCreators().size(), 2u);
    }
    Variable w =
        Variable::Create(root, "w", TensorShape({}), DataType::kFloat, Initializer::Zeros());
    EXPECT_EQ(w.name(), "w_outer");
    // Thread-local: another thread sees no creator.
    std::string other_name;
    std::thread([&] {
      Variable x =
          Variable::Create(root, "x", TensorShape({}), DataType::kFloat, Initializer::Zeros());
      other_name = x.name();
    }).join();
    EXPECT_EQ(other_name, "x");
    // CreateFromValue does not consult creators.
    Variable y = Variable::CreateFromValue(root, "y", ops::Const(root, 1.0f));
    EXPECT_EQ(y.name(), "y");
  }
  EXPECT_TRUE(VariableCreatorScope::CurrentCreators().empty());
  Variable z = Variable::Create(root, "z", TensorShape({}), DataType::kFloat, Initializer::Zeros());
  EXPECT_EQ(z.name(), "z");
  EXPECT_EQ(calls.size(), 3u);
  ASSERT_TRUE(root.ok()) << root.status();
  auto session = MakeSession(root);
  std::vector<Tensor> outputs;
  ASSERT_TRUE(session->Run({}, {}, {"v_inner_outer/Assign"}, &outputs).ok());
}

TEST(VariableCreatorTest, TheCreatorReceivesTheOptions) {
  Scope root = Scope::NewRootScope();
  std::vector<VariableOptions> seen;
  VariableCreatorScope record([&](const Scope& scope, std::string_view name,
                                  const TensorShape& shape, DataType dtype,
                                  const Initializer& initializer, const VariableOptions& options) {
    seen.push_back(options);
    return Variable::Create(scope, name, shape, dtype, initializer);
  });
  VariableOptions on_read;
  on_read.synchronization = VariableSynchronization::kOnRead;
  on_read.aggregation = VariableAggregation::kMean;
  ASSERT_TRUE(Variable::Create(root, "moving_mean", TensorShape({2}), DataType::kFloat,
                               Initializer::Zeros(), on_read));
  ASSERT_TRUE(
      Variable::Create(root, "kernel", TensorShape({2}), DataType::kFloat, Initializer::Zeros()));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].synchronization, VariableSynchronization::kOnRead);
  EXPECT_EQ(seen[0].aggregation, VariableAggregation::kMean);
  EXPECT_EQ(seen[1].synchronization, VariableSynchronization::kAuto);
  EXPECT_EQ(seen[1].aggregation, VariableAggregation::kNone);
}

TEST(VariableCreatorTest, ACreatorMayReturnAnotherVariableOrFail) {
  Scope root = Scope::NewRootScope();
  Variable shared =
      Variable::Create(root, "shared", TensorShape({3}), DataType::kFloat, Initializer::Zeros());
  VariableCreatorScope reuse([&](const Scope& scope, std::string_view name, const TensorShape&,
                                 DataType, const Initializer&, const VariableOptions&) -> Variable {
    if (name == "bad") {
      scope.UpdateStatus(InvalidArgument("no variable '", name, "' here"));
      return Variable();
    }
    return shared;
  });
  Variable a = Variable::Create(root, "a", TensorShape({3}), DataType::kFloat, Initializer::Ones());
  EXPECT_EQ(a.name(), "shared");
  Variable bad =
      Variable::Create(root, "bad", TensorShape({3}), DataType::kFloat, Initializer::Ones());
  EXPECT_FALSE(bad);
  EXPECT_TRUE(IsInvalidArgument(root.status())) << root.status();
  EXPECT_NE(root.status().message().find("'bad'"), std::string::npos) << root.status();
}

}  // namespace
}  // namespace weft
