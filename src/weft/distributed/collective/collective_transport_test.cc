// Behaviour every CollectiveTransport promises, checked on both the shared-memory and the TCP
// transport with real member processes (forked from this single-threaded test binary).
#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/distributed/collective/shm_transport.h"
#include "weft/distributed/collective/tcp_transport.h"
#include "weft/distributed/collective/transport_test_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using transport_testing::Case;
using transport_testing::Digest;
using transport_testing::Group;
using transport_testing::Kind;
using transport_testing::MemberContext;
using transport_testing::MemberResult;
using transport_testing::RunCase;
using transport_testing::RunMembers;

void ExpectAllOkAndIdentical(const std::vector<MemberResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_THAT(results[r].report, StartsWith("OK")) << "member " << r;
    EXPECT_EQ(results[r].report, results[0].report) << "member " << r << " differs from 0";
  }
}

class TransportTest : public ::testing::TestWithParam<Kind> {};

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
  };
  for (int n : {2, 3, 4}) {
    Group group(GetParam(), n);
    auto results = RunMembers(n, [&](const MemberContext& member) -> std::string {
      auto transport = group.Create(member.rank());
      if (!transport.ok()) return transport.status().ToString();
      std::string report = "OK ";
      for (size_t i = 0; i < cases.size(); ++i) {
        const std::string got =
            cases[i].dtype == DataType::kFloat
                ? RunCase<float>(**transport, cases[i], 7, static_cast<int64_t>(i))
                : RunCase<double>(**transport, cases[i], 7, static_cast<int64_t>(i));
        if (got.find(' ') == std::string::npos || got.rfind("WRONG", 0) == 0 ||
            got.find(':') != std::string::npos) {
          return StrCat("case ", i, ": ", got);
        }
        report += got;
      }
      return report;
    });
    SCOPED_TRACE(StrCat(n, " members"));
    ExpectAllOkAndIdentical(results);
  }
}

TEST_P(TransportTest, BroadcastFromNonZeroRootAndAllGather) {
  const int n = 3;
  Group group(GetParam(), n);
  auto results = RunMembers(n, [&](const MemberContext& member) -> std::string {
    auto transport = group.Create(member.rank());
    if (!transport.ok()) return transport.status().ToString();
    std::string report = "OK ";
    int64_t sequence = 0;
    for (int64_t size : {int64_t{1001}, int64_t{(1 << 20) + 3}}) {
      Tensor value(DataType::kFloat, TensorShape({size}));
      for (int64_t i = 0; i < size; ++i) {
        value.data<float>()[i] = member.rank() == 2 ? static_cast<float>(i % 1000) : -1.0f;
      }
      Status status = (*transport)->Broadcast(TransportOp{3, sequence++, "bcast"}, 2, &value);
      if (!status.ok()) return status.ToString();
      for (int64_t i = 0; i < size; ++i) {
        if (value.data<float>()[i] != static_cast<float>(i % 1000)) return "WRONG broadcast";
      }
      report += Digest(value) + " ";
    }
    for (int64_t rows : {int64_t{2}, int64_t{400001}}) {
      Tensor input(DataType::kFloat, TensorShape({rows, 3}));
      for (int64_t i = 0; i < rows * 3; ++i) {
        input.data<float>()[i] = static_cast<float>(member.rank() * 1000000 + i);
      }
      Tensor output;
      Status status = (*transport)->AllGather(TransportOp{4, sequence++, "gather"}, input, &output);
      if (!status.ok()) return status.ToString();
      if (!(output.shape() == TensorShape({rows * n, 3}))) return "WRONG gather shape";
      for (int m = 0; m < n; ++m) {
        for (int64_t i = 0; i < rows * 3; ++i) {
          if (output.data<float>()[m * rows * 3 + i] != static_cast<float>(m * 1000000 + i)) {
            return StrCat("WRONG gather member ", m, " element ", i);
          }
        }
      }
      report += Digest(output) + " ";
    }
    return report;
  });
  ExpectAllOkAndIdentical(results);
}

TEST_P(TransportTest, RepeatedOperationsWithAlternatingInstanceKeys) {
  const int n = 3;
  Group group(GetParam(), n);
  auto results = RunMembers(n, [&](const MemberContext& member) -> std::string {
    auto transport = group.Create(member.rank());
    if (!transport.ok()) return transport.status().ToString();
    int64_t sequences[2] = {0, 0};
    for (int i = 0; i < 40; ++i) {
      const int key = i % 2;
      const Case c{DataType::kFloat, {TensorShape({i % 4 == 0 ? 100003 : 10 + i})}, i % 3 == 0};
      const std::string got = RunCase<float>(**transport, c, key + 1, sequences[key]++);
      if (got.find(':') != std::string::npos || got.rfind("WRONG", 0) == 0) {
        return StrCat("op ", i, ": ", got);
      }
      if (i % 10 == 9) {
        Tensor value = Tensor::FromVector<float>({1, 2, 3});
        Status status = (*transport)->Broadcast(TransportOp{9, i, "bcast"}, 1, &value);
        if (!status.ok()) return status.ToString();
      }
    }
    return "OK";
  });
  ExpectAllOkAndIdentical(results);
}

// Member 1 calls with `odd` where the others call with `usual`; every member must fail.
std::vector<MemberResult> RunMismatch(Kind kind, int n, const Case& usual, const Case& odd) {
  Group group(kind, n);
  return RunMembers(n, [&](const MemberContext& member) -> std::string {
    auto transport = group.Create(member.rank());
    if (!transport.ok()) return transport.status().ToString();
    const Case& c = member.rank() == 1 ? odd : usual;
    return c.dtype == DataType::kFloat ? RunCase<float>(**transport, c, 5, 0)
                                       : RunCase<double>(**transport, c, 5, 0);
  });
}

void ExpectMismatchOnEveryMember(const std::vector<MemberResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_THAT(results[r].report, StartsWith("INVALID_ARGUMENT")) << "member " << r;
    EXPECT_THAT(results[r].report, HasSubstr("/job:worker/task:1")) << "member " << r;
    EXPECT_THAT(results[r].report, HasSubstr(StrCat("/job:worker/task:", r == 1 ? 0 : r)))
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
  auto results = RunMembers(n, [&](const MemberContext& member) -> std::string {
    auto transport = group.Create(member.rank(), std::chrono::milliseconds(700));
    if (!transport.ok()) return transport.status().ToString();
    if (member.rank() == 2) {
      member.WaitForOthersToExit(std::chrono::seconds(20));
      return "IDLE";
    }
    return RunCase<float>(**transport, {DataType::kFloat, {TensorShape({100})}, false}, 1, 0);
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
  auto results = RunMembers(2, [&](const MemberContext& member) -> std::string {
    auto transport = group.Create(member.rank(), std::chrono::seconds(30));
    if (!transport.ok()) return transport.status().ToString();
    if (member.rank() == 1) {
      member.WaitForOthersToExit(std::chrono::seconds(20));
      return "IDLE";
    }
    CollectiveTransport* raw = transport->get();
    // The pause only makes it likely that the call is blocked when the abort comes; the call
    // fails with the abort's status either way.
    std::thread aborter([raw] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      raw->StartAbort(Cancelled("test cancelled the step"));
    });
    const auto start = std::chrono::steady_clock::now();
    std::string got = RunCase<float>(*raw, {DataType::kFloat, {TensorShape({100})}, false}, 1, 0);
    const auto took = std::chrono::steady_clock::now() - start;
    aborter.join();
    std::string later = RunCase<float>(*raw, {DataType::kFloat, {TensorShape({100})}, false}, 1, 1);
    if (took > std::chrono::seconds(10)) return "TOO SLOW";
    return got + " | " + later;
  });
  EXPECT_EQ(results[0].report,
            "CANCELLED: test cancelled the step | CANCELLED: test cancelled the step");
}

TEST_P(TransportTest, PeerThatDiesFailsTheOthersWithinTheTimeout) {
  const int n = 3;
  Group group(GetParam(), n);
  auto results = RunMembers(n, [&](const MemberContext& member) -> std::string {
    auto transport = group.Create(member.rank(), std::chrono::seconds(15));
    if (!transport.ok()) return transport.status().ToString();
    const Case c{DataType::kFloat, {TensorShape({200001})}, false};
    std::string first = RunCase<float>(**transport, c, 1, 0);
    if (member.rank() == 2) _exit(7);
    const auto start = std::chrono::steady_clock::now();
    std::string second = RunCase<float>(**transport, c, 1, 1);
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
  Group group(GetParam(), n);
  auto results = RunMembers(n, [&](const MemberContext& member) -> std::string {
    auto transport = group.Create(member.rank());
    if (!transport.ok()) return transport.status().ToString();
    std::string report = "OK ";
    for (int i = 0; i < 6; ++i) {
      const Case c{DataType::kFloat, {TensorShape({i % 2 == 0 ? 10 : 300007})}, i % 3 == 0};
      const std::string got = RunCase<float>(**transport, c, 1, i);
      if (got.find(':') != std::string::npos || got.rfind("WRONG", 0) == 0) return got;
      report += got;
    }
    return report;
  });
  ExpectAllOkAndIdentical(results);
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportTest, ::testing::Values(Kind::kShm, Kind::kTcp),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kShm ? "Shm" : "Tcp";
                         });

}  // namespace
}  // namespace weft
