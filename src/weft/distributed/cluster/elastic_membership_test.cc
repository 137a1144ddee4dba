#include "weft/distributed/cluster/elastic_membership.h"

#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft/core/net/socket.h"
#include "weft/distributed/cluster/elastic_membership_service.h"

namespace weft {
namespace {

using std::chrono::milliseconds;

JoinRequest Request(int worker, int64_t step = 0, bool has_state = false, bool failed = false) {
  JoinRequest request;
  request.worker = worker;
  request.address = "127.0.0.1:" + std::to_string(40000 + worker);
  request.has_state = has_state;
  request.position = {step, 0, step};
  request.failed_step = failed;
  return request;
}

// Joins `workers` at once (each from its own thread, as the workers do) and returns their replies.
std::vector<StatusOr<ElasticGeneration>> JoinAll(ElasticMembership& membership,
                                                 const std::vector<JoinRequest>& requests) {
  std::vector<std::future<StatusOr<ElasticGeneration>>> replies;
  for (const JoinRequest& request : requests) {
    replies.push_back(std::async(std::launch::async,
                                 [&membership, request] { return membership.Join(request); }));
  }
  std::vector<StatusOr<ElasticGeneration>> generations;
  for (auto& reply : replies) {
    EXPECT_EQ(reply.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    generations.push_back(reply.get());
  }
  return generations;
}

ElasticMembership::Options ThreeWorkers() {
  ElasticMembership::Options options;
  options.num_workers = 3;
  options.join_timeout = milliseconds(5000);
  options.first_join_timeout = milliseconds(5000);
  options.min_workers_timeout = milliseconds(5000);
  return options;
}

TEST(ElasticMembershipTest, FirstGenerationWaitsForEveryWorkerOfTheLaunch) {
  ElasticMembership membership(ThreeWorkers());
  for (int w = 0; w < 3; ++w) membership.WorkerStarted(w);
  auto generations = JoinAll(membership, {Request(2), Request(0), Request(1)});
  for (int w = 0; w < 3; ++w) {
    ASSERT_TRUE(generations[w].ok()) << generations[w].status();
    EXPECT_EQ(generations[w]->number, 1);
    EXPECT_EQ(generations[w]->workers, (std::vector<int>{0, 1, 2}));
    EXPECT_FALSE(generations[w]->resume);
    EXPECT_EQ(generations[w]->member_lost_at_unix_ms, 0);
  }
  EXPECT_EQ(generations[0]->rank, 2);
  EXPECT_EQ(generations[1]->rank, 0);
  EXPECT_EQ(generations[0]->addresses[2], "127.0.0.1:40002");
  EXPECT_EQ(membership.membership_changes(), 0);
}

TEST(ElasticMembershipTest, SurvivorsReformAroundTheMostAdvancedMember) {
  ElasticMembership membership(ThreeWorkers());
  for (int w = 0; w < 3; ++w) membership.WorkerStarted(w);
  ASSERT_TRUE(JoinAll(membership, {Request(0), Request(1), Request(2)})[0].ok());
  EXPECT_FALSE(membership.Watch(1, milliseconds(10)).pending);

  membership.WorkerExited(1);
  const MembershipChange change = membership.Watch(1, milliseconds(5000));
  EXPECT_TRUE(change.pending);
  EXPECT_EQ(change.lost, std::vector<int>{1});
  // Worker 2 finished step 11 before the loss reached it; worker 0 failed in step 11.
  auto generations =
      JoinAll(membership, {Request(0, 10, true, /*failed=*/true), Request(2, 11, true, true)});
  ASSERT_TRUE(generations[0].ok()) << generations[0].status();
  ASSERT_TRUE(generations[1].ok());
  EXPECT_EQ(generations[0]->number, 2);
  EXPECT_EQ(generations[0]->workers, (std::vector<int>{2, 0}));
  EXPECT_EQ(generations[1]->rank, 0);
  EXPECT_TRUE(generations[0]->resume);
  EXPECT_EQ(generations[0]->position.global_step, 11);
  EXPECT_EQ(generations[0]->steps_recomputed, 1);  // step 12, begun by worker 2
  EXPECT_GT(generations[0]->member_lost_at_unix_ms, 0);
  EXPECT_EQ(membership.membership_changes(), 1);
}

TEST(ElasticMembershipTest, AJoiningWorkerIsAddedAtTheNextBoundaryAndRankedLast) {
  ElasticMembership membership(ThreeWorkers());
  for (int w = 0; w < 3; ++w) membership.WorkerStarted(w);
  ASSERT_TRUE(JoinAll(membership, {Request(0), Request(1), Request(2)})[0].ok());
  membership.WorkerExited(0);
  ASSERT_TRUE(JoinAll(membership, {Request(1, 5, true), Request(2, 5, true)})[0].ok());

  membership.WorkerStarted(0);  // restarted
  auto joiner = std::async(std::launch::async, [&] { return membership.Join(Request(0)); });
  const MembershipChange change = membership.Watch(2, milliseconds(5000));
  EXPECT_TRUE(change.pending);
  EXPECT_TRUE(change.lost.empty());
  auto survivors = JoinAll(membership, {Request(1, 9, true), Request(2, 9, true)});
  ASSERT_EQ(joiner.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  StatusOr<ElasticGeneration> joined = joiner.get();
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(joined->workers, (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(joined->rank, 2);
  EXPECT_TRUE(joined->resume);
  EXPECT_EQ(joined->position.global_step, 9);
  EXPECT_EQ(joined->steps_recomputed, 0);
  EXPECT_EQ(joined->member_lost_at_unix_ms, 0);
  EXPECT_EQ(membership.membership_changes(), 2);
}

TEST(ElasticMembershipTest, AMemberLostAndBackBeforeTheOthersReformLeftAndJoined) {
  ElasticMembership membership(ThreeWorkers());
  for (int w = 0; w < 3; ++w) membership.WorkerStarted(w);
  ASSERT_TRUE(JoinAll(membership, {Request(0), Request(1), Request(2)})[0].ok());
  membership.WorkerExited(1);
  membership.WorkerStarted(1);
  // Back at the boundary before the others come to it (had both come first, they would have
  // re-formed without the lost worker, which would then wait alone).
  auto back = std::async(std::launch::async, [&] { return membership.Join(Request(1)); });
  ASSERT_TRUE(membership.WaitUntilWaiting(1, milliseconds(20000)));
  auto others = JoinAll(membership, {Request(0, 4, true), Request(2, 4, true)});
  ASSERT_EQ(back.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  StatusOr<ElasticGeneration> generation = back.get();
  ASSERT_TRUE(generation.ok()) << generation.status();
  ASSERT_TRUE(others[0].ok()) << others[0].status();
  EXPECT_EQ(generation->workers, (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(others[0]->workers, (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(generation->membership_changes, 2);
  EXPECT_EQ(membership.membership_changes(), 2);
}

TEST(ElasticMembershipTest, AMemberThatDoesNotComeToTheBoundaryIsEvicted) {
  ElasticMembership::Options options = ThreeWorkers();
  options.join_timeout = milliseconds(200);
  std::vector<int> evicted;
  options.evict = [&evicted](int worker) { evicted.push_back(worker); };
  ElasticMembership membership(options);
  for (int w = 0; w < 3; ++w) membership.WorkerStarted(w);
  ASSERT_TRUE(JoinAll(membership, {Request(0), Request(1), Request(2)})[0].ok());
  // Worker 1 is stopped (SIGSTOP): the others' collectives fail, and they ask to re-form.
  auto generations = JoinAll(membership, {Request(0, 3, true, true), Request(2, 3, true, true)});
  ASSERT_TRUE(generations[0].ok()) << generations[0].status();
  EXPECT_EQ(generations[0]->workers, (std::vector<int>{0, 2}));
  EXPECT_EQ(evicted, std::vector<int>{1});
  EXPECT_GT(generations[0]->member_lost_at_unix_ms, 0);
}

TEST(ElasticMembershipTest, FewerThanMinWorkersFailsNamingTheMissing) {
  ElasticMembership::Options options = ThreeWorkers();
  options.min_workers = 3;
  options.min_workers_timeout = milliseconds(200);
  ElasticMembership membership(options);
  for (int w = 0; w < 3; ++w) membership.WorkerStarted(w);
  ASSERT_TRUE(JoinAll(membership, {Request(0), Request(1), Request(2)})[0].ok());
  membership.WorkerExited(2);
  auto generations = JoinAll(membership, {Request(0, 3, true), Request(1, 3, true)});
  ASSERT_FALSE(generations[0].ok());
  EXPECT_TRUE(IsDeadlineExceeded(generations[0].status()));
  EXPECT_NE(generations[0].status().message().find("--min-workers 3"), std::string::npos)
      << generations[0].status();
  EXPECT_NE(generations[0].status().message().find("missing: worker 2"), std::string::npos);
}

TEST(ElasticMembershipTest, AWorkerAskingAfterTheJobFinishedIsToldSo) {
  ElasticMembership membership(ThreeWorkers());
  for (int w = 0; w < 3; ++w) membership.WorkerStarted(w);
  ASSERT_TRUE(JoinAll(membership, {Request(0), Request(1), Request(2)})[0].ok());
  membership.WorkerExited(2);
  membership.WorkerStarted(2);  // restarted, and slow to start
  membership.WorkerFinished(0);
  StatusOr<ElasticGeneration> late = membership.Join(Request(2));
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_TRUE(late->finished);
}

TEST(ElasticMembershipTest, BadWorkerAndShutdownAreErrors) {
  ElasticMembership membership(ThreeWorkers());
  EXPECT_TRUE(IsInvalidArgument(membership.Join(Request(7)).status()));
  auto waiting = std::async(std::launch::async, [&] { return membership.Join(Request(0)); });
  membership.Shutdown();
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(IsUnavailable(waiting.get().status()));
}

TEST(ElasticMembershipServiceTest, JoinAndWatchOverLoopback) {
  ElasticMembership membership(ThreeWorkers());
  for (int w = 0; w < 3; ++w) membership.WorkerStarted(w);
  auto server = ElasticMembershipServer::Create(&membership, "127.0.0.1");
  ASSERT_TRUE(server.ok()) << server.status();
  const ElasticMembershipClient client((*server)->address());
  std::vector<std::future<StatusOr<ElasticGeneration>>> replies;
  for (int w = 0; w < 3; ++w) {
    replies.push_back(std::async(
        std::launch::async, [&client, w] { return client.Join(Request(w), milliseconds(10000)); }));
  }
  for (int w = 0; w < 3; ++w) {
    ASSERT_EQ(replies[w].wait_for(std::chrono::seconds(20)), std::future_status::ready);
    StatusOr<ElasticGeneration> generation = replies[w].get();
    ASSERT_TRUE(generation.ok()) << generation.status();
    EXPECT_EQ(generation->rank, w);
    EXPECT_EQ(generation->addresses,
              (std::vector<std::string>{"127.0.0.1:40000", "127.0.0.1:40001", "127.0.0.1:40002"}));
  }
  StatusOr<MembershipChange> quiet = client.Watch(1, milliseconds(10));
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  EXPECT_FALSE(quiet->pending);
  membership.WorkerExited(2);
  StatusOr<MembershipChange> change = client.Watch(1, milliseconds(5000));
  ASSERT_TRUE(change.ok()) << change.status();
  EXPECT_TRUE(change->pending);
  EXPECT_EQ(change->lost, std::vector<int>{2});

  StatusOr<ElasticGeneration> bad = client.Join(Request(9), milliseconds(1000));
  EXPECT_TRUE(IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_NE(bad.status().message().find("worker 9"), std::string::npos);
}

TEST(ElasticMembershipServiceTest, GarbageOnTheWireIsRefused) {
  ElasticMembership membership(ThreeWorkers());
  auto server = ElasticMembershipServer::Create(&membership, "127.0.0.1");
  ASSERT_TRUE(server.ok()) << server.status();
  StatusOr<net::HostPort> target = net::SplitHostPort((*server)->address());
  ASSERT_TRUE(target.ok());
  for (const std::string& garbage :
       {std::string(16, 'x'), std::string("WEFTELRQ\x05\0\0\0\0\0\0\0{oops", 21)}) {
    StatusOr<net::Socket> socket =
        net::ConnectWithDeadline(target->host, target->port, net::DeadlineIn(milliseconds(5000)));
    ASSERT_TRUE(socket.ok()) << socket.status();
    ASSERT_TRUE(socket
                    ->WriteFull(garbage.data(), garbage.size(), net::DeadlineIn(milliseconds(5000)),
                                "garbage")
                    .ok());
    char reply[16];
    // The server answers with an error (or closes); it does not crash or hang.
    Status read =
        socket->ReadFull(reply, sizeof(reply), net::DeadlineIn(milliseconds(5000)), "the reply");
    EXPECT_FALSE(IsDeadlineExceeded(read)) << read;
  }
  const ElasticMembershipClient client((*server)->address());
  EXPECT_FALSE(client.Watch(0, milliseconds(10)).value().pending);
}

}  // namespace
}  // namespace weft
