// Behaviour every CollectiveTransport promises, checked on every registered transport with real
// member processes (forked from this single-threaded test binary).
#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/distributed/collective/collective_transport_registry.h"
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
using testing::IsFailure;
using testing::MemberContext;
using testing::MemberResult;
using testing::RunAnyCase;
using testing::RunCase;
using testing::RunCases;

using ::testing::HasSubstr;
using ::testing::StartsWith;

class TransportTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TransportTest, AllReduceMatchesPlainSumBitwiseOnEveryMember) {
  const int64_t big = (1 << 20) + 3;
  const std::vector<Case> cases = {
      {DataType::kFloat, {TensorShape({1})}, false},
      {DataType::kFloat, {TensorShape({1001})}, false},
      {DataType::kFloat, {TensorShape({big})}, false},
      {DataType::kDouble, {TensorShape({1001})}, true},
      {DataType::kDouble, {TensorShape({300001})}, true},
      {DataType::kFloat, {TensorShape({3, 5}), TensorShape({0}), TensorShape({70001})}, true},
      // Rounded sums: only computing each element once makes members agree bit for bit.
      {DataType::kFloat, {TensorShape({262147})}, false, /*exact=*/false},
      {DataType::kDouble, {TensorShape({1001}), TensorShape({2})}, false, /*exact=*/false},
      // bfloat16 (half the bytes of float32), summed in float32 and rounded.
      {DataType::kBFloat16, {TensorShape({1001}), TensorShape({70001})}, true},
      {DataType::kBFloat16, {TensorShape({big})}, false, /*exact=*/false},
  };
  for (int n : {2, 3, 4}) {
    Group group(GetParam(), n);
    auto results = group.Run([&](const MemberContext& member) -> std::string {
      return RunCases(member.transport(), cases, 7);
    });
    SCOPED_TRACE(StrCat(n, " members"));
    ExpectAllOkAndIdentical(results);
  }
}

TEST_P(TransportTest, BroadcastFromNonZeroRootAndAllGather) {
  const int n = 3;
  Group group(GetParam(), n);
  auto results = group.Run([&](const MemberContext& member) -> std::string {
    std::string report = "OK ";
    int64_t sequence = 0;
    for (int64_t size : {int64_t{1001}, int64_t{(1 << 20) + 3}}) {
      if (!AppendDigests(BroadcastDigest(member.transport(), 2, size, sequence++), &report))
        return report;
    }
    for (int64_t rows : {int64_t{2}, int64_t{400001}}) {
      if (!AppendDigests(AllGatherDigest(member.transport(), rows, sequence++), &report))
        return report;
    }
    return report;
  });
  ExpectAllOkAndIdentical(results);
}

TEST_P(TransportTest, RepeatedOperationsWithAlternatingInstanceKeys) {
  const int n = 3;
  Group group(GetParam(), n);
  auto results = group.Run([&](const MemberContext& member) -> std::string {
    int64_t sequences[2] = {0, 0};
    for (int i = 0; i < 40; ++i) {
      const int key = i % 2;
      const Case c{DataType::kFloat, {TensorShape({i % 4 == 0 ? 100003 : 10 + i})}, i % 3 == 0};
      const std::string got = RunCase<float>(member.transport(), c, key + 1, sequences[key]++);
      if (IsFailure(got)) return StrCat("op ", i, ": ", got);
      if (i % 10 == 9) {
        Tensor value = Tensor::FromVector<float>({1, 2, 3});
        Status status = member.transport().Broadcast(TransportOp{9, i, "bcast"}, 1, &value);
        if (!status.ok()) return status.ToString();
      }
    }
    return "OK";
  });
  ExpectAllOkAndIdentical(results);
}

// Member 1 calls with `odd` where the others call with `usual`; every member must fail.
std::vector<MemberResult> RunMismatch(const std::string& kind, int n, const Case& usual,
                                      const Case& odd) {
  Group group(kind, n);
  return group.Run([&](const MemberContext& member) -> std::string {
    return RunAnyCase(member.transport(), member.rank() == 1 ? odd : usual, 5, 0);
  });
}

// Every member fails naming the odd member and one that disagrees with it: the member itself where
// it saw the mismatch, else (a hierarchical member told by its host's leader) whoever saw it.
void ExpectMismatchOnEveryMember(const std::vector<MemberResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_THAT(results[r].report, StartsWith("INVALID_ARGUMENT")) << "member " << r;
    EXPECT_THAT(results[r].report, HasSubstr("/job:worker/task:1")) << "member " << r;
    EXPECT_THAT(results[r].report,
                ::testing::AnyOf(HasSubstr("/job:worker/task:0"), HasSubstr("/job:worker/task:2")))
        << "member " << r;
  }
}

TEST_P(TransportTest, MismatchedElementCountIsInvalidArgumentOnEveryMember) {
  ExpectMismatchOnEveryMember(RunMismatch(GetParam(), 3,
                                          {DataType::kFloat, {TensorShape({1000})}, false},
                                          {DataType::kFloat, {TensorShape({1001})}, false}));
  // Sizes on either side of the one-exchange threshold take different paths.
  ExpectMismatchOnEveryMember(RunMismatch(GetParam(), 3,
                                          {DataType::kFloat, {TensorShape({1000})}, false},
                                          {DataType::kFloat, {TensorShape({1000000})}, false}));
}

TEST_P(TransportTest, MismatchedDtypeIsInvalidArgumentOnEveryMember) {
  ExpectMismatchOnEveryMember(RunMismatch(GetParam(), 2,
                                          {DataType::kFloat, {TensorShape({64})}, false},
                                          {DataType::kDouble, {TensorShape({64})}, false}));
}

TEST_P(TransportTest, MemberThatNeverArrivesIsDeadlineExceededNamingIt) {
  const int n = 3;
  Group group(GetParam(), n);
  auto results =
      group.Run(std::chrono::milliseconds(700), [&](const MemberContext& member) -> std::string {
        if (member.rank() == 2) {
          member.WaitForOthersToExit(std::chrono::seconds(20));
          return "IDLE";
        }
        return RunCase<float>(member.transport(), {DataType::kFloat, {TensorShape({100})}, false},
                              1, 0);
      });
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(results[r].report, StartsWith("DEADLINE_EXCEEDED")) << "member " << r;
    EXPECT_THAT(results[r].report, HasSubstr("/job:worker/task:2")) << "member " << r;
    EXPECT_THAT(results[r].report, HasSubstr("last operation")) << "member " << r;
  }
  EXPECT_EQ(results[2].report, "IDLE");
}

TEST_P(TransportTest, StartAbortWakesABlockedCall) {
  Group group(GetParam(), 2);
  auto results =
      group.Run(std::chrono::seconds(30), [&](const MemberContext& member) -> std::string {
        if (member.rank() == 1) {
          member.WaitForOthersToExit(std::chrono::seconds(20));
          return "IDLE";
        }
        CollectiveTransport* raw = &member.transport();
        // The pause only makes it likely that the call is blocked when the abort comes;
        // the call fails with the abort's status either way.
        std::thread aborter([raw] {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          raw->StartAbort(Cancelled("test cancelled the step"));
        });
        const auto start = std::chrono::steady_clock::now();
        std::string got =
            RunCase<float>(*raw, {DataType::kFloat, {TensorShape({100})}, false}, 1, 0);
        const auto took = std::chrono::steady_clock::now() - start;
        aborter.join();
        std::string later =
            RunCase<float>(*raw, {DataType::kFloat, {TensorShape({100})}, false}, 1, 1);
        if (took > std::chrono::seconds(10)) return "TOO SLOW";
        return got + " | " + later;
      });
  EXPECT_EQ(results[0].report,
            "CANCELLED: test cancelled the step | CANCELLED: test cancelled the step");
}

TEST_P(TransportTest, PeerThatDiesFailsTheOthersWithinTheTimeout) {
  const int n = 3;
  Group group(GetParam(), n);
  auto results =
      group.Run(std::chrono::seconds(15), [&](const MemberContext& member) -> std::string {
        const Case c{DataType::kFloat, {TensorShape({200001})}, false};
        std::string first = RunCase<float>(member.transport(), c, 1, 0);
        if (member.rank() == 2) _exit(7);
        const auto start = std::chrono::steady_clock::now();
        std::string second = RunCase<float>(member.transport(), c, 1, 1);
        const auto took = std::chrono::steady_clock::now() - start;
        return StrCat(second, took < std::chrono::seconds(10) ? " IN TIME" : " TOO SLOW");
      });
  EXPECT_EQ(results[2].exit_code, 7);
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(results[r].report, ::testing::Not(StartsWith("OK"))) << "member " << r;
    EXPECT_THAT(results[r].report, ::testing::EndsWith(" IN TIME")) << "member " << r;
    EXPECT_THAT(results[r].report,
                ::testing::AnyOf(StartsWith("UNAVAILABLE"), StartsWith("ABORTED")))
        << "member " << r;
  }
}

TEST_P(TransportTest, EightMembersOnTwoCores) {
  const int n = 8;
  std::vector<Case> cases;
  for (int i = 0; i < 6; ++i) {
    cases.push_back({DataType::kFloat, {TensorShape({i % 2 == 0 ? 10 : 300007})}, i % 3 == 0});
  }
  Group group(GetParam(), n);
  auto results = group.Run([&](const MemberContext& member) -> std::string {
    return RunCases(member.transport(), cases, 1);
  });
  ExpectAllOkAndIdentical(results);
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportTest,
                         ::testing::ValuesIn(CollectiveTransportRegistry::Global().Names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace weft
