// CollectiveGroupLeader: groups form once every device joined, in one order for everyone; bad
// members are refused naming both sides; a withdrawn or timed-out member hears who had joined.
#include "weft/distributed/collective/collective_group_leader.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/notification.h"

namespace weft {
namespace {

constexpr auto kWait = std::chrono::seconds(10);

struct Answer {
  Notification done;
  Status status;
  proto::CompleteGroupRequest request;
  proto::CompleteGroupResponse response;
  CallOptions options;
};

proto::CompleteGroupRequest Request(int64_t key, int size, int task, int device,
                                    uint64_t incarnation = 7, int64_t timeout_ms = 0) {
  proto::CompleteGroupRequest request;
  request.set_group_key(key);
  request.set_group_size(size);
  request.set_device_type("CPU");
  request.set_timeout_ms(timeout_ms);
  proto::CollectiveMember* member = request.mutable_member();
  member->set_task("/job:worker/replica:0/task:" + std::to_string(task));
  member->set_device(member->task() + "/device:CPU:" + std::to_string(device));
  member->set_hostname("host");
  (*member->mutable_transport_addresses())["tcp"] = "127.0.0.1:" + std::to_string(1000 + task);
  member->set_incarnation(incarnation + task);
  return request;
}

std::unique_ptr<Answer> Ask(CollectiveGroupLeader& leader, proto::CompleteGroupRequest request) {
  auto answer = std::make_unique<Answer>();
  answer->request = std::move(request);
  Answer* raw = answer.get();
  leader.CompleteGroupAsync(&raw->options, &raw->request, &raw->response,
                            [raw](const Status& status) {
                              raw->status = status;
                              raw->done.Notify();
                            });
  return answer;
}

TEST(CollectiveGroupLeaderTest, AnswersEveryMemberOnceTheGroupIsCompleteInOneOrder) {
  CollectiveGroupLeader leader("/job:worker/replica:0/task:0");
  // Task 10 sorts after task 2 (numerically), device 1 after device 0.
  auto a = Ask(leader, Request(5, 4, 10, 0));
  auto b = Ask(leader, Request(5, 4, 2, 1));
  auto c = Ask(leader, Request(5, 4, 2, 0));
  EXPECT_FALSE(a->done.HasBeenNotified());
  auto d = Ask(leader, Request(5, 4, 0, 0));
  for (Answer* answer : {a.get(), b.get(), c.get(), d.get()}) {
    ASSERT_TRUE(answer->done.WaitForNotificationWithTimeout(kWait));
    ASSERT_TRUE(answer->status.ok()) << answer->status;
    ASSERT_EQ(answer->response.members_size(), 4);
    EXPECT_EQ(answer->response.group_token(), a->response.group_token());
    EXPECT_FALSE(answer->response.group_token().empty());
  }
  const auto& members = a->response.members();
  EXPECT_EQ(members[0].device(), "/job:worker/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(members[1].device(), "/job:worker/replica:0/task:2/device:CPU:0");
  EXPECT_EQ(members[2].device(), "/job:worker/replica:0/task:2/device:CPU:1");
  EXPECT_EQ(members[3].device(), "/job:worker/replica:0/task:10/device:CPU:0");
  // A retry from the same process is answered at once; another group gets another token.
  auto retry = Ask(leader, Request(5, 4, 2, 1));
  ASSERT_TRUE(retry->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_TRUE(retry->status.ok()) << retry->status;
  auto solo = Ask(leader, Request(6, 1, 0, 0));
  ASSERT_TRUE(solo->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_NE(solo->response.group_token(), a->response.group_token());
}

TEST(CollectiveGroupLeaderTest, MismatchedMembersAreRefusedNamingBoth) {
  CollectiveGroupLeader leader("/job:worker/replica:0/task:0");
  auto first = Ask(leader, Request(1, 2, 0, 0));
  auto size = Ask(leader, Request(1, 3, 1, 0));
  ASSERT_TRUE(size->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_TRUE(IsInvalidArgument(size->status)) << size->status;
  EXPECT_NE(size->status.message().find("group_size 3"), std::string::npos) << size->status;
  EXPECT_NE(size->status.message().find("task:0/device:CPU:0"), std::string::npos);
  proto::CompleteGroupRequest gpu = Request(1, 2, 1, 0);
  gpu.set_device_type("GPU");
  auto type = Ask(leader, gpu);
  ASSERT_TRUE(type->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_TRUE(IsInvalidArgument(type->status)) << type->status;
  auto bad = Ask(leader, Request(1, 0, 1, 0));
  ASSERT_TRUE(bad->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_TRUE(IsInvalidArgument(bad->status)) << bad->status;

  auto second = Ask(leader, Request(1, 2, 1, 0));
  ASSERT_TRUE(first->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_TRUE(first->status.ok()) << first->status;
  // A third device joining the complete group, and a restarted process, are refused.
  auto extra = Ask(leader, Request(1, 2, 2, 0));
  ASSERT_TRUE(extra->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_TRUE(IsInvalidArgument(extra->status)) << extra->status;
  auto restarted = Ask(leader, Request(1, 2, 1, 0, /*incarnation=*/99));
  ASSERT_TRUE(restarted->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(restarted->status.code(), Code::kFailedPrecondition) << restarted->status;
  EXPECT_NE(restarted->status.message().find("restarted"), std::string::npos);
}

TEST(CollectiveGroupLeaderTest, ATimedOutMemberHearsWhoJoinedAndLeavesTheGroup) {
  CollectiveGroupLeader leader("/job:worker/replica:0/task:0");
  auto early = Ask(leader, Request(3, 3, 0, 0, 7, /*timeout_ms=*/50));
  ASSERT_TRUE(early->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(early->status.code(), Code::kDeadlineExceeded) << early->status;
  EXPECT_NE(early->status.message().find("3 members expected"), std::string::npos);
  EXPECT_NE(early->status.message().find("task:0/device:CPU:0"), std::string::npos);

  // Cancelling withdraws too; the group still forms from the members that stay.
  auto a = Ask(leader, Request(8, 2, 1, 0));
  a->options.StartCancel();
  ASSERT_TRUE(a->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(a->status.code(), Code::kDeadlineExceeded) << a->status;
  auto b = Ask(leader, Request(8, 2, 0, 0));
  auto c = Ask(leader, Request(8, 2, 2, 0));
  ASSERT_TRUE(b->done.WaitForNotificationWithTimeout(kWait));
  ASSERT_TRUE(b->status.ok()) << b->status;
  EXPECT_EQ(b->response.members(1).task(), "/job:worker/replica:0/task:2");
}

TEST(CollectiveGroupLeaderTest, StoppingAnswersTheWaitingCalls) {
  auto leader = std::make_unique<CollectiveGroupLeader>("/job:worker/replica:0/task:0");
  auto waiting = Ask(*leader, Request(4, 2, 0, 0));
  leader.reset();
  ASSERT_TRUE(waiting->done.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(waiting->status.code(), Code::kAborted) << waiting->status;
}

}  // namespace
}  // namespace weft
