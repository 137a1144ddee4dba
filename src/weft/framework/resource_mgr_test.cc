#include "weft/framework/resource_mgr.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace weft {
namespace {

class Counter final : public ResourceBase {
 public:
  explicit Counter(int start) : value(start) {}
  std::string DebugString() const override { return StrCat("Counter(", value.load(), ")"); }
  std::atomic<int> value;
};

class Other final : public ResourceBase {
 public:
  std::string DebugString() const override { return "Other"; }
};

TEST(ResourceMgrTest, CreateThenLookup) {
  ResourceMgr mgr;
  ASSERT_TRUE(mgr.Create("c", "n", std::make_shared<Counter>(3)).ok());
  StatusOr<std::shared_ptr<Counter>> found = mgr.Lookup<Counter>("c", "n");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ((*found)->value.load(), 3);
  // The same name in another container is another resource.
  EXPECT_TRUE(IsNotFound(mgr.Lookup<Counter>("d", "n").status()));
}

TEST(ResourceMgrTest, CreateTwiceIsAlreadyExists) {
  ResourceMgr mgr;
  ASSERT_TRUE(mgr.Create("c", "n", std::make_shared<Counter>(1)).ok());
  Status again = mgr.Create("c", "n", std::make_shared<Counter>(2));
  EXPECT_TRUE(IsAlreadyExists(again)) << again;
  EXPECT_EQ((*mgr.Lookup<Counter>("c", "n"))->value.load(), 1);
}

TEST(ResourceMgrTest, LookupMissingNamesContainerAndName) {
  ResourceMgr mgr;
  Status status = mgr.Lookup<Counter>("box", "missing").status();
  EXPECT_TRUE(IsNotFound(status)) << status;
  EXPECT_NE(status.message().find("'missing'"), std::string::npos) << status;
  EXPECT_NE(status.message().find("'box'"), std::string::npos) << status;
}

TEST(ResourceMgrTest, LookupOfAnotherTypeIsInvalidArgument) {
  ResourceMgr mgr;
  ASSERT_TRUE(mgr.Create("", "n", std::make_shared<Other>()).ok());
  Status status = mgr.Lookup<Counter>("", "n").status();
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("Other"), std::string::npos) << status;
}

TEST(ResourceMgrTest, LookupOrCreateMakesOnce) {
  ResourceMgr mgr;
  int made = 0;
  auto creator = [&]() -> StatusOr<std::shared_ptr<Counter>> {
    ++made;
    return std::make_shared<Counter>(7);
  };
  auto first = mgr.LookupOrCreate<Counter>("", "n", creator);
  auto second = mgr.LookupOrCreate<Counter>("", "n", creator);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(made, 1);
  EXPECT_EQ(first->get(), second->get());
}

TEST(ResourceMgrTest, LookupOrCreatePassesCreatorErrors) {
  ResourceMgr mgr;
  auto failing = []() -> StatusOr<std::shared_ptr<Counter>> { return Internal("no"); };
  EXPECT_TRUE(IsInternal(mgr.LookupOrCreate<Counter>("", "n", failing).status()));
  EXPECT_TRUE(IsNotFound(mgr.Lookup<Counter>("", "n").status()));
}

TEST(ResourceMgrTest, LookupOrCreateIsRaceFree) {
  ResourceMgr mgr;
  std::atomic<int> made{0};
  std::vector<Counter*> seen(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto found =
          mgr.LookupOrCreate<Counter>("", "shared", [&]() -> StatusOr<std::shared_ptr<Counter>> {
            made.fetch_add(1);
            return std::make_shared<Counter>(0);
          });
      seen[i] = found.ok() ? found->get() : nullptr;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(made.load(), 1);
  for (Counter* c : seen) EXPECT_EQ(c, seen[0]);
}

TEST(ResourceMgrTest, DeleteKeepsHoldersAlive) {
  ResourceMgr mgr;
  ASSERT_TRUE(mgr.Create("", "n", std::make_shared<Counter>(5)).ok());
  std::shared_ptr<Counter> held = *mgr.Lookup<Counter>("", "n");
  ASSERT_TRUE(mgr.Delete("", "n").ok());
  EXPECT_TRUE(IsNotFound(mgr.Lookup<Counter>("", "n").status()));
  EXPECT_TRUE(IsNotFound(mgr.Delete("", "n")));
  EXPECT_EQ(held->value.load(), 5);
}

TEST(ResourceMgrTest, CleanupAndClear) {
  ResourceMgr mgr;
  ASSERT_TRUE(mgr.Create("a", "x", std::make_shared<Counter>(1)).ok());
  ASSERT_TRUE(mgr.Create("a", "y", std::make_shared<Counter>(2)).ok());
  ASSERT_TRUE(mgr.Create("b", "x", std::make_shared<Counter>(3)).ok());
  EXPECT_EQ(mgr.DebugStrings().size(), 3u);
  ASSERT_TRUE(mgr.Cleanup("a").ok());
  EXPECT_TRUE(IsNotFound(mgr.Cleanup("a")));
  EXPECT_TRUE(mgr.Lookup<Counter>("b", "x").ok());
  EXPECT_EQ(mgr.DebugStrings(), std::vector<std::string>{"b/x: Counter(3)"});
  mgr.Clear();
  EXPECT_TRUE(mgr.DebugStrings().empty());
}

}  // namespace
}  // namespace weft
