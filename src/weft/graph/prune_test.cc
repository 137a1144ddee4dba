#include "weft/graph/prune.h"

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/ops.h"

namespace weft {
namespace {

class BuildStepGraphTest : public ::testing::Test {
 protected:
  BuildStepGraphTest() : root_(Scope::NewRootScope()) {
    x_ = ops::Placeholder(root_.WithOpName("x"), DataType::kFloat, PartialShape({-1, 2}));
    auto doubled = ops::Mul(root_.WithOpName("doubled"), x_, 2.0f);
    ops::Neg(root_.WithOpName("unused"), x_);
    y_ = ops::Relu(root_.WithOpName("y"), doubled);
    ops::NoOp(root_.WithOpName("step").WithControlDependencies({doubled}));
    EXPECT_TRUE(root_.ok()) << root_.status();
  }

  std::set<std::string> NodeNames(const Graph& graph) {
    std::set<std::string> names;
    for (Node* node : graph.nodes()) names.insert(node->name());
    return names;
  }

  Scope root_;
  Output x_, y_;
};

TEST_F(BuildStepGraphTest, KeepsOnlyWhatFetchesNeedAndAddsArgsAndRetvals) {
  auto step = BuildStepGraph(*root_.graph(), {{"x"}, {"y"}, {}});
  ASSERT_TRUE(step.ok()) << step.status();
  std::set<std::string> names = NodeNames(**step);
  EXPECT_FALSE(names.contains("unused"));
  EXPECT_FALSE(names.contains("x"));  // replaced by its _Arg
  EXPECT_FALSE(names.contains("step"));
  EXPECT_TRUE(names.contains("doubled"));
  EXPECT_TRUE(names.contains("_arg_x_0"));
  EXPECT_TRUE(names.contains("_retval_y_0"));
  Node* doubled = (*step)->FindNode("doubled");
  EXPECT_EQ(doubled->input_edge(0)->src->type_string(), "_Arg");
}

TEST_F(BuildStepGraphTest, TargetsPullInTheirControlInputs) {
  auto step = BuildStepGraph(*root_.graph(), {{"x"}, {}, {"step"}});
  ASSERT_TRUE(step.ok()) << step.status();
  std::set<std::string> names = NodeNames(**step);
  EXPECT_TRUE(names.contains("step"));
  EXPECT_TRUE(names.contains("doubled"));
  EXPECT_FALSE(names.contains("y"));
}

TEST_F(BuildStepGraphTest, AFedTensorCanBeFetchedAndFetchedTwice) {
  auto step = BuildStepGraph(*root_.graph(), {{"doubled"}, {"doubled", "doubled:0"}, {}});
  ASSERT_TRUE(step.ok()) << step.status();
  std::set<std::string> names = NodeNames(**step);
  EXPECT_FALSE(names.contains("x"));   // doubled is fed: nothing upstream is needed
  EXPECT_EQ((*step)->num_nodes(), 3);  // one _Arg, two _Retvals
}

TEST_F(BuildStepGraphTest, BadNamesAreErrorsNamingThem) {
  Status s = BuildStepGraph(*root_.graph(), {{}, {"nope:0"}, {}}).status();
  EXPECT_TRUE(IsNotFound(s));
  EXPECT_NE(s.message().find("fetch 'nope:0'"), std::string::npos) << s;
  s = BuildStepGraph(*root_.graph(), {{"ghost"}, {"y"}, {}}).status();
  EXPECT_NE(s.message().find("feed 'ghost'"), std::string::npos) << s;
  s = BuildStepGraph(*root_.graph(), {{}, {"y:4"}, {}}).status();
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("has 1 outputs"), std::string::npos) << s;
  s = BuildStepGraph(*root_.graph(), {{}, {}, {"phantom"}}).status();
  EXPECT_NE(s.message().find("target 'phantom'"), std::string::npos) << s;
  s = BuildStepGraph(*root_.graph(), {{"x", "x:0"}, {"y"}, {}}).status();
  EXPECT_NE(s.message().find("fed twice"), std::string::npos) << s;
}

TEST(StepSignatureKeyTest, NamesEachListInOrder) {
  EXPECT_EQ(StepSignatureKey({{"x:0", "w"}, {"y:0"}, {"step"}}), "3:x:0,1:w->3:y:0/4:step");
  EXPECT_EQ(StepSignatureKey({}), "->/");
  // The order of the feeds is the order of the step's arguments: another order, another step.
  EXPECT_NE(StepSignatureKey({{"x", "w"}, {}, {}}), StepSignatureKey({{"w", "x"}, {}, {}}));
}

// Regression test: the key was the lists joined by "," with "->" and "/" between them, so a fetch
// "a/b" with a target "c" and a fetch "a" with a target "b/c" shared one cached step.
TEST(StepSignatureKeyTest, SeparatorsInsideNamesDoNotMakeSignaturesCollide) {
  EXPECT_NE(StepSignatureKey({{}, {"a/b"}, {"c"}}), StepSignatureKey({{}, {"a"}, {"b/c"}}));
  EXPECT_NE(StepSignatureKey({{"a,b"}, {}, {}}), StepSignatureKey({{"a", "b"}, {}, {}}));
  EXPECT_NE(StepSignatureKey({{"a->b"}, {}, {}}), StepSignatureKey({{"a"}, {"b"}, {}}));
  EXPECT_NE(StepSignatureKey({{"1:a"}, {}, {}}), StepSignatureKey({{"a"}, {}, {}}));
}

}  // namespace
}  // namespace weft
