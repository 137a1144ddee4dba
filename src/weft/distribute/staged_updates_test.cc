#include "weft/distribute/staged_updates.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/variable.h"
#include "weft/runtime/session.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using ::testing::HasSubstr;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

// A step over two devices: v += 2x and w -= 1 * 2x on CPU:0, then (after w's update) count += 1
// on CPU:1, all three grouped by the NoOp "step" as a training step's updates are. The 1 that
// count adds is reshaped to the fed "one_shape", so that feeding [2] fails the step on CPU:1
// alone, as a worker lost half-way through a step fails it.
class StagedUpdatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Scope on0 = root_.WithDevice(kCpu0);
    Scope on1 = root_.WithDevice(kCpu1);
    v_ = Variable::Create(on0, "v", TensorShape(), DataType::kFloat, Initializer::Zeros());
    w_ = Variable::Create(on0, "w", TensorShape(), DataType::kFloat, Initializer::Zeros());
    count_ = Variable::Create(on1, "count", TensorShape(), DataType::kFloat, Initializer::Zeros());
    first_new_ = root_.graph()->num_node_ids();
    Output x = ops::Placeholder(root_.WithOpName("x"), DataType::kFloat, PartialShape({}));
    Output gradient = ops::Mul(root_, x, ops::Const(root_, 2.0f));
    Output add = ops::AssignAddVariableOp(on0.WithOpName("add_v"), v_.handle(), gradient);
    Output apply = ops::ResourceApplyGradientDescent(on0.WithOpName("apply_w"), w_.handle(),
                                                     ops::Const(on0, 1.0f), gradient);
    Output one = ops::Reshape(
        on1, ops::Const(on1, 1.0f),
        ops::Placeholder(root_.WithOpName("one_shape"), DataType::kInt32, PartialShape({-1})));
    Output counted = ops::AssignAddVariableOp(
        on1.WithOpName("count_it").WithControlDependencies({apply}), count_.handle(), one);
    ops::NoOp(root_.WithOpName("step").WithControlDependencies({add, apply, counted}));
    reads_ = {v_.Read(root_).name(), w_.Read(root_).name(), count_.Read(root_).name()};
  }

  void StartSession() {
    SessionOptions options;
    (*options.config.mutable_device_count())["CPU"] = 2;
    session_ = NewSession(options).value();
    ASSERT_TRUE(session_->Create(root_.ToGraphDef().value()).ok());
    std::vector<Tensor> none;
    ASSERT_TRUE(
        session_
            ->Run({}, {},
                  {v_.initializer().name(), w_.initializer().name(), count_.initializer().name()},
                  &none)
            .ok());
  }

  std::vector<float> Values() {
    std::vector<Tensor> out;
    EXPECT_TRUE(session_->Run({}, reads_, {}, &out).ok());
    std::vector<float> values;
    for (const Tensor& t : out) values.push_back(*t.data<float>());
    return values;
  }

  Status RunStep(const StagedUpdates& staged, float x, int64_t id, bool fail = false) {
    std::vector<Tensor> none;
    return session_->Run(
        {{"x", Tensor::Scalar<float>(x)},
         {"one_shape", fail ? Tensor::FromVector<int32_t>({2}) : Tensor::FromVector<int32_t>({})},
         {staged.commit_id, Tensor::Scalar<int64_t>(id)}},
        {}, {"step"}, &none);
  }

  // Runs every group's commit (or discard) for `id` in one run.
  Status Finish(const StagedUpdates& staged, int64_t id, bool commit) {
    std::vector<std::pair<std::string, Tensor>> feeds;
    std::vector<std::string> targets;
    for (const StagedUpdateGroup& group : staged.groups) {
      feeds.emplace_back(group.commit_id, Tensor::Scalar<int64_t>(id));
      targets.push_back(commit ? group.commit : group.discard);
    }
    std::vector<Tensor> none;
    return session_->Run(feeds, {}, targets, &none);
  }

  Scope root_ = Scope::NewRootScope();
  Variable v_, w_, count_;
  int first_new_ = 0;
  std::vector<std::string> reads_;
  std::unique_ptr<Session> session_;
};

TEST_F(StagedUpdatesTest, TheStepStagesAndTheCommitApplies) {
  auto staged = StageUpdates(*root_.graph(), "step", first_new_, "exactly_once");
  ASSERT_TRUE(staged.ok()) << staged.status();
  ASSERT_EQ(staged->groups.size(), 2u);
  EXPECT_EQ(staged->groups[0].device, kCpu0);
  EXPECT_EQ(staged->groups[1].device, kCpu1);
  StartSession();

  ASSERT_TRUE(RunStep(*staged, 3, 7).ok());
  EXPECT_EQ(Values(), (std::vector<float>{0, 0, 0}));  // staged, not applied
  ASSERT_TRUE(Finish(*staged, 7, /*commit=*/true).ok());
  EXPECT_EQ(Values(), (std::vector<float>{6, -6, 1}));

  // A commit id is applied once: its values were taken.
  Status twice = Finish(*staged, 7, /*commit=*/true);
  EXPECT_EQ(twice.code(), Code::kNotFound) << twice;
  EXPECT_THAT(twice.message(), HasSubstr("nothing is staged for commit 7"));
  EXPECT_EQ(Values(), (std::vector<float>{6, -6, 1}));

  // A discarded step leaves the variables alone and cannot be committed afterwards.
  ASSERT_TRUE(RunStep(*staged, 10, 8).ok());
  ASSERT_TRUE(Finish(*staged, 8, /*commit=*/false).ok());
  EXPECT_EQ(Finish(*staged, 8, /*commit=*/true).code(), Code::kNotFound);
  EXPECT_EQ(Values(), (std::vector<float>{6, -6, 1}));

  // Steps staged side by side commit in any order, each with its own values.
  ASSERT_TRUE(RunStep(*staged, 1, 20).ok());
  ASSERT_TRUE(RunStep(*staged, 100, 21).ok());
  ASSERT_TRUE(Finish(*staged, 21, /*commit=*/true).ok());
  ASSERT_TRUE(Finish(*staged, 20, /*commit=*/true).ok());
  EXPECT_EQ(Values(), (std::vector<float>{208, -208, 3}));
}

// What ExactlyOnceSteps does when a step fails part-way (here on CPU:1, after CPU:0 may have
// staged its share): discarded, it applies nothing anywhere; its rerun is applied once.
TEST_F(StagedUpdatesTest, AStepThatFailedPartWayIsDiscardedAndItsRerunAppliedOnce) {
  auto staged = StageUpdates(*root_.graph(), "step", first_new_, "exactly_once");
  ASSERT_TRUE(staged.ok()) << staged.status();
  StartSession();
  Status failed = RunStep(*staged, 3, 1, /*fail=*/true);
  ASSERT_FALSE(failed.ok());
  ASSERT_TRUE(Finish(*staged, 1, /*commit=*/false).ok());
  EXPECT_EQ(Values(), (std::vector<float>{0, 0, 0}));
  ASSERT_TRUE(RunStep(*staged, 3, 2).ok());
  ASSERT_TRUE(Finish(*staged, 2, /*commit=*/true).ok());
  EXPECT_EQ(Values(), (std::vector<float>{6, -6, 1}));
  // The failed attempt's commit id has nothing left to apply.
  EXPECT_EQ(Finish(*staged, 1, /*commit=*/true).code(), Code::kNotFound);
  EXPECT_EQ(Values(), (std::vector<float>{6, -6, 1}));
}

TEST_F(StagedUpdatesTest, TheCommitRunsOnlyOnTheUpdatesDevices) {
  auto staged = StageUpdates(*root_.graph(), "step", first_new_, "exactly_once");
  ASSERT_TRUE(staged.ok()) << staged.status();
  // Nothing of the step (the placeholder x, the gradient) is needed to commit.
  for (const StagedUpdateGroup& group : staged->groups) {
    const Node* commit = root_.graph()->FindNode(group.commit);
    ASSERT_NE(commit, nullptr);
    std::vector<const Node*> stack = {commit};
    int visited = 0;
    while (!stack.empty() && ++visited < 1000) {
      const Node* node = stack.back();
      stack.pop_back();
      EXPECT_NE(node->name(), "x");
      EXPECT_NE(node->type_string(), "Mul") << node->name();
      for (const Edge* edge : node->in_edges()) stack.push_back(edge->src);
    }
  }
}

TEST_F(StagedUpdatesTest, ErrorsNameTheStepOrTheUpdate) {
  EXPECT_THAT(StageUpdates(*root_.graph(), "nope", first_new_, "p").status().message(),
              HasSubstr("no step 'nope'"));
  ops::NoOp(root_.WithOpName("idle"));
  EXPECT_THAT(StageUpdates(*root_.graph(), "idle", first_new_, "p").status().message(),
              HasSubstr("step 'idle' updates no variable"));
  // Updates already sent to a session are not rewritten.
  Status old = StageUpdates(*root_.graph(), "step", root_.graph()->num_node_ids(), "p").status();
  EXPECT_EQ(old.code(), Code::kFailedPrecondition);
  EXPECT_THAT(old.message(), HasSubstr("already runs in a session"));
}

// Bookkeeping that reads a variable after the updates and assigns it (Adam's powers) belongs to
// the commit: each commit applies v -= power * x with the power as the step read it, then halves
// the power, once.
TEST(StagedUpdatesBookkeepingTest, WhatReadsAfterTheUpdatesRunsAtTheCommit) {
  Scope root = Scope::NewRootScope();
  Scope on0 = root.WithDevice(kCpu0);
  Variable v = Variable::Create(on0, "v", TensorShape(), DataType::kFloat, Initializer::Zeros());
  Variable power =
      Variable::Create(on0, "power", TensorShape(), DataType::kFloat, Initializer::Ones());
  const int first_new = root.graph()->num_node_ids();
  Output x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, PartialShape({}));
  Output apply =
      ops::ResourceApplyGradientDescent(on0.WithOpName("apply"), v.handle(), power.Read(on0), x);
  Output later =
      ops::ReadVariableOp(on0.WithControlDependencies({apply}), power.handle(), DataType::kFloat);
  Output halve = ops::AssignVariableOp(on0.WithOpName("halve"), power.handle(),
                                       ops::Mul(on0, later, ops::Const(on0, 0.5f)));
  ops::NoOp(root.WithOpName("step").WithControlDependencies({apply, halve}));
  const std::vector<std::string> reads = {v.Read(root).name(), power.Read(root).name()};
  auto staged = StageUpdates(*root.graph(), "step", first_new, "exactly_once");
  ASSERT_TRUE(staged.ok()) << staged.status();
  ASSERT_EQ(staged->groups.size(), 1u);

  auto session = NewSession(SessionOptions()).value();
  ASSERT_TRUE(session->Create(root.ToGraphDef().value()).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(
      session->Run({}, {}, {v.initializer().name(), power.initializer().name()}, &out).ok());
  const StagedUpdateGroup& group = staged->groups[0];
  for (int64_t id : {1, 2}) {
    ASSERT_TRUE(session
                    ->Run({{"x", Tensor::Scalar<float>(1)},
                           {staged->commit_id, Tensor::Scalar<int64_t>(id)}},
                          {}, {"step"}, &out)
                    .ok());
    ASSERT_TRUE(
        session->Run({{group.commit_id, Tensor::Scalar<int64_t>(id)}}, {}, {group.commit}, &out)
            .ok());
  }
  ASSERT_TRUE(session->Run({}, reads, {}, &out).ok());
  EXPECT_EQ(*out[0].data<float>(), -1.5f);  // -1 * 1, then -1 * 0.5
  EXPECT_EQ(*out[1].data<float>(), 0.25f);
}

TEST(StagedUpdatesErrorTest, AnUpdateWithoutADeviceIsNamed) {
  Scope root = Scope::NewRootScope();
  Variable v = Variable::Create(root, "v", TensorShape(), DataType::kFloat, Initializer::Zeros());
  const int first_new = root.graph()->num_node_ids();
  Output add = ops::AssignAddVariableOp(root.WithOpName("add"), v.handle(), ops::Const(root, 1.f));
  ops::NoOp(root.WithOpName("step").WithControlDependencies({add}));
  Status status = StageUpdates(*root.graph(), "step", first_new, "p").status();
  EXPECT_EQ(status.code(), Code::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("'add'"));
  EXPECT_THAT(status.message(), HasSubstr("has no device"));
}

}  // namespace
}  // namespace weft::distribute
