// The hierarchical transport with real member processes grouped into "hosts" that are all this
// machine (shared memory works between any processes of it): even, interleaved (A,B,A,B), uneven
// (A,A,B) and one-process-per-host layouts; results bitwise equal everywhere; failures reach all.
#include "weft/distributed/collective/hierarchical_transport.h"

#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/distributed/testing/transport_test_util.h"

// In the test helpers' namespace, which these tests use throughout.
namespace weft {
namespace {

using testing::AllGatherDigest;
using testing::AppendDigests;
using testing::BroadcastDigest;
using testing::Case;
using testing::ExpectAllOkAndIdentical;
using testing::Group;
using testing::MemberBody;
using testing::MemberContext;
using testing::MemberResult;
using testing::RunCase;
using testing::RunCases;
using testing::RunOnTransports;

using ::testing::HasSubstr;
using ::testing::StartsWith;

using Hosts = std::vector<std::string>;

// Runs `body` in every member on its hierarchical transport over `hosts`. Listeners for every
// member come from a TCP test group; only the leaders' are used.
std::vector<MemberResult> RunOnHosts(Group& group, const Hosts& hosts,
                                     std::chrono::milliseconds timeout, const MemberBody& body) {
  HierarchicalTransportTuning tuning;
  // Small slots make the shared-memory stages run in many chunks.
  tuning.shm.slot_bytes = 64 << 10;
  // Every "host" is this machine: waiters must not spin on the cores that the others need.
  tuning.shm.host_processes = static_cast<int>(hosts.size());
  auto create = [&](int rank) {
    return CreateHierarchicalTransport(group.Options(rank, timeout), hosts,
                                       group.TakeTcpListener(rank), group.addresses(), tuning);
  };
  return RunOnTransports(static_cast<int>(hosts.size()), create, body);
}
std::vector<MemberResult> RunOnHosts(Group& group, const Hosts& hosts, const MemberBody& body) {
  return RunOnHosts(group, hosts, std::chrono::seconds(20), body);
}

std::string Describe(const Hosts& hosts) {
  std::string text;
  for (const std::string& host : hosts) text += host;
  return text;
}

const Hosts kLayouts[] = {
    {"A", "A", "B", "B"}, {"A", "B", "A", "B"}, {"A", "A", "B"}, {"A", "B", "C"}, {"A", "A", "A"}};

TEST(HierarchicalTransportTest, AllReduceMatchesPlainSumBitwiseOnEveryMember) {
  const int64_t big = (1 << 20) + 3;
  const std::vector<Case> cases = {
      {DataType::kFloat, {TensorShape({1})}, false},
      {DataType::kFloat, {TensorShape({1001})}, true},
      {DataType::kFloat, {TensorShape({big})}, false},
      {DataType::kDouble, {TensorShape({1001})}, true},
      {DataType::kFloat, {TensorShape({3, 5}), TensorShape({0}), TensorShape({70001})}, true},
      // Rounded sums: members agree bit for bit only if each element is computed once.
      {DataType::kFloat, {TensorShape({262147})}, false, /*exact=*/false},
      {DataType::kDouble, {TensorShape({1001}), TensorShape({2})}, true, /*exact=*/false},
  };
  for (const Hosts& hosts : kLayouts) {
    const int n = static_cast<int>(hosts.size());
    Group group("tcp", n);
    auto results = RunOnHosts(group, hosts, [&](const MemberContext& member) -> std::string {
      return RunCases(member.transport(), cases, 7);
    });
    SCOPED_TRACE(Describe(hosts));
    ExpectAllOkAndIdentical(results);
  }
}

// Broadcasts from every root (leaders and not), then all-gathers, checking the rows' order.
TEST(HierarchicalTransportTest, BroadcastFromEveryRootAndAllGatherInRankOrder) {
  for (const Hosts& hosts : kLayouts) {
    const int n = static_cast<int>(hosts.size());
    Group group("tcp", n);
    auto results = RunOnHosts(group, hosts, [&](const MemberContext& member) -> std::string {
      std::string report = "OK ";
      int64_t sequence = 0;
      for (int root = 0; root < n; ++root) {
        const int64_t size = root % 2 == 0 ? 1001 : 100003;
        if (!AppendDigests(BroadcastDigest(member.transport(), root, size, sequence++), &report)) {
          return report;
        }
      }
      for (int64_t rows : {int64_t{1}, int64_t{40001}}) {
        if (!AppendDigests(AllGatherDigest(member.transport(), rows, sequence++), &report))
          return report;
      }
      return report;
    });
    SCOPED_TRACE(Describe(hosts));
    ExpectAllOkAndIdentical(results);
  }
}

// Members in `odd` call with 1001 elements where the others call with 1000; every member fails
// with InvalidArgument, and the error names `named` (an odd member the stage that saw it names).
void ExpectMismatchEverywhere(const Hosts& hosts, const std::vector<int>& odd, int named) {
  const int n = static_cast<int>(hosts.size());
  Group group("tcp", n);
  auto results = RunOnHosts(group, hosts, [&](const MemberContext& member) -> std::string {
    const bool is_odd = std::find(odd.begin(), odd.end(), member.rank()) != odd.end();
    const Case c{DataType::kFloat, {TensorShape({is_odd ? 1001 : 1000})}, false};
    const std::string first = RunCase<float>(member.transport(), c, 5, 0);
    // Poisoned: a later call fails at once with the first error.
    const std::string later = RunCase<float>(member.transport(), c, 5, 1);
    return first == later ? first : StrCat(first, " | LATER ", later);
  });
  SCOPED_TRACE(Describe(hosts));
  for (int r = 0; r < n; ++r) {
    EXPECT_THAT(results[r].report, StartsWith("INVALID_ARGUMENT")) << "member " << r;
    EXPECT_THAT(results[r].report, HasSubstr(StrCat("/job:worker/task:", named))) << "member " << r;
    EXPECT_THAT(results[r].report, ::testing::Not(HasSubstr("LATER"))) << "member " << r;
  }
}

TEST(HierarchicalTransportTest, MismatchIsInvalidArgumentOnEveryMember) {
  ExpectMismatchEverywhere({"A", "A", "B", "B"}, {1}, 1);     // a non-leader, seen inside host A
  ExpectMismatchEverywhere({"A", "B", "A", "B"}, {3}, 3);     // interleaved, inside host B
  ExpectMismatchEverywhere({"A", "A", "B"}, {2}, 2);          // a host of one, seen by the leaders
  ExpectMismatchEverywhere({"A", "A", "B", "B"}, {2, 3}, 2);  // a whole host, seen by the leaders
}

// Host A calls 2000 float32 where host B calls 1000 float64: the leaders' one-exchange path moves
// equal byte counts, so only the operations it carries tell the difference.
TEST(HierarchicalTransportTest, OtherDtypeOfEqualBytesOnAnotherHostIsInvalidArgument) {
  const Hosts hosts = {"A", "A", "B", "B"};
  Group group("tcp", 4);
  auto results = RunOnHosts(group, hosts, [&](const MemberContext& member) -> std::string {
    if (member.rank() < 2) {
      return RunCase<float>(member.transport(), {DataType::kFloat, {TensorShape({2000})}, false}, 5,
                            0);
    }
    return RunCase<double>(member.transport(), {DataType::kDouble, {TensorShape({1000})}, false}, 5,
                           0);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_THAT(results[r].report, StartsWith("INVALID_ARGUMENT")) << "member " << r;
    EXPECT_THAT(results[r].report, HasSubstr("1000 float64")) << "member " << r;
    EXPECT_THAT(results[r].report, HasSubstr("/job:worker/task:2")) << "member " << r;
  }
}

TEST(HierarchicalTransportTest, StartAbortWakesABlockedCallAndReachesTheHost) {
  const Hosts hosts = {"A", "A", "B", "B"};
  // Member 0 blocks in its host's stage (member 1 idles); member 2 blocks among the leaders
  // (member 0 never gets there) while member 3 waits for member 2 inside host B.
  for (int aborter : {0, 2}) {
    Group group("tcp", 4);
    auto results = RunOnHosts(
        group, hosts, std::chrono::seconds(30), [&](const MemberContext& member) -> std::string {
          const bool works = member.rank() == aborter || (aborter == 2 && member.rank() == 3);
          if (!works) {
            member.WaitForOthersToExit(std::chrono::seconds(20));
            return "IDLE";
          }
          CollectiveTransport* raw = &member.transport();
          std::thread stopper([&] {
            if (member.rank() != aborter) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            raw->StartAbort(Cancelled("test cancelled the step"));
          });
          const Case c{DataType::kFloat, {TensorShape({100})}, false};
          const auto start = std::chrono::steady_clock::now();
          const std::string got = RunCase<float>(*raw, c, 1, 0);
          const auto took = std::chrono::steady_clock::now() - start;
          stopper.join();
          const std::string later = RunCase<float>(*raw, c, 1, 1);
          if (took > std::chrono::seconds(10)) return "TOO SLOW";
          return got + " | " + later;
        });
    SCOPED_TRACE(StrCat("aborting member ", aborter));
    EXPECT_EQ(results[aborter].report,
              "CANCELLED: test cancelled the step | CANCELLED: test cancelled the step");
    if (aborter == 2) {
      EXPECT_THAT(results[3].report, StartsWith("ABORTED"));
      EXPECT_THAT(results[3].report, HasSubstr("/job:worker/task:2"));
      EXPECT_THAT(results[3].report, HasSubstr("test cancelled the step"));
    }
  }
}

TEST(HierarchicalTransportTest, MemberThatNeverArrivesFailsEveryoneWithinTheTimeout) {
  const Hosts hosts = {"A", "B", "A", "B"};
  Group group("tcp", 4);
  auto results =
      RunOnHosts(group, hosts, std::chrono::milliseconds(700),
                 [&](const MemberContext& member) -> std::string {
                   if (member.rank() == 2) {
                     member.WaitForOthersToExit(std::chrono::seconds(20));
                     return "IDLE";
                   }
                   const auto start = std::chrono::steady_clock::now();
                   std::string got = RunCase<float>(
                       member.transport(), {DataType::kFloat, {TensorShape({100})}, false}, 1, 0);
                   const auto took = std::chrono::steady_clock::now() - start;
                   return StrCat(got, took < std::chrono::seconds(5) ? " IN TIME" : " TOO SLOW");
                 });
  // Member 0 waits for member 2 in host A and names it; host B hears of a failure (member 0's,
  // or its own leader's deadline among the leaders: the two race).
  EXPECT_THAT(results[0].report, StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_THAT(results[0].report, HasSubstr("/job:worker/task:2"));
  for (int r : {0, 1, 3}) {
    EXPECT_THAT(results[r].report, ::testing::Not(StartsWith("OK"))) << "member " << r;
    EXPECT_THAT(results[r].report, ::testing::EndsWith(" IN TIME")) << "member " << r;
  }
  EXPECT_EQ(results[2].report, "IDLE");
}

TEST(HierarchicalTransportTest, WrongNumberOfHostsIsInvalidArgument) {
  Group group("tcp", 2);
  auto transport = CreateHierarchicalTransport(group.Options(0, std::chrono::seconds(1)), {"A"},
                                               group.TakeTcpListener(0), group.addresses());
  ASSERT_FALSE(transport.ok());
  EXPECT_THAT(transport.status().ToString(), StartsWith("INVALID_ARGUMENT"));
  EXPECT_THAT(transport.status().message(), HasSubstr("1 member hosts for a group of 2"));
}

}  // namespace
}  // namespace weft
