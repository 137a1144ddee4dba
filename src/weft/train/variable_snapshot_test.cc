// VariableSnapshot in one process: Take copies every component, Restore puts back the components
// of the named tasks only (after the variables moved on), and Restore before any Take is
// FailedPrecondition naming the tasks.
#include "weft/train/variable_snapshot.h"

#include <gtest/gtest.h>

#include "weft/distribute/strategy.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops.h"

namespace weft::train {
namespace {

using distribute::testing::Fetch;
using distribute::testing::MakeSession;
using distribute::testing::RunTargets;

constexpr char kTask[] = "/job:localhost/replica:0/task:0";

TEST(VariableSnapshotTest, RestoresTheComponentsOfTheNamedTasksFromTheLastSnapshot) {
  auto strategy = distribute::MirroredStrategy::Create({"/cpu:0", "/cpu:1"});
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  Scope root = Scope::NewRootScope();
  auto w = (*strategy)->CreateVariable(root, "w", TensorShape({2}), DataType::kFloat,
                                       Initializer::Constant(1.0));
  ASSERT_TRUE(w.ok()) << w.status();
  auto snapshot = VariableSnapshot::Create(root.NewSubScope("snapshot"), {*w});
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  std::vector<Output> doubles, reads;
  for (int i = 0; i < 2; ++i) {
    const Variable& component = (*w)->component(i);
    doubles.push_back(component.AssignAdd(root, component.Read(root)));
    reads.push_back(component.Read(root));
  }
  std::unique_ptr<Session> session = MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  RunTargets(*session, {(*w)->component(0).initializer(), (*w)->component(1).initializer()});

  auto none = (*snapshot)->Restore(*session, {kTask});
  EXPECT_TRUE(IsFailedPrecondition(none.status())) << none.status();
  EXPECT_NE(none.status().message().find(kTask), std::string::npos) << none.status();

  RunTargets(*session, doubles);  // 2
  ASSERT_TRUE((*snapshot)->Take(*session, 7).ok());
  EXPECT_EQ((*snapshot)->step(), 7);
  EXPECT_EQ((*snapshot)->bytes(), 2 * 2 * static_cast<int64_t>(sizeof(float)));
  RunTargets(*session, doubles);  // 4
  auto elsewhere = (*snapshot)->Restore(*session, {"/job:ps/replica:0/task:3"});
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_EQ(*elsewhere, 0);
  EXPECT_EQ(Fetch(*session, {reads[0]})[0].data<float>()[0], 4.0f);

  auto restored = (*snapshot)->Restore(*session, {kTask});
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(*restored, 2);
  for (const Tensor& value : Fetch(*session, reads)) {
    EXPECT_EQ(value.data<float>()[0], 2.0f);
    EXPECT_EQ(value.data<float>()[1], 2.0f);
  }
}

}  // namespace
}  // namespace weft::train
