// What only the shared-memory transport promises: segments leave nothing in /dev/shm, a full
// /dev/shm is a Status, and tensors far larger than a slot go through in many chunks.
#include "weft/distributed/collective/shm_transport.h"

#include <cerrno>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include "weft/distributed/collective/internal/shm_segment.h"
#include "weft/distributed/collective/transport_test_util.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using transport_testing::Case;
using transport_testing::Group;
using transport_testing::Kind;
using transport_testing::MemberContext;
using transport_testing::RunCase;
using transport_testing::RunMembers;

bool SegmentExists(const std::string& token, int rank) {
  const std::string name = collective_internal::ShmSegmentName(token, rank);
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd >= 0) close(fd);
  return fd >= 0 || errno != ENOENT;
}

TEST(ShmTransportTest, ConnectedGroupLeavesNothingInDevShm) {
  Group group(Kind::kShm, 3);
  auto results = RunMembers(3, [&](const MemberContext& member) -> std::string {
    auto transport = group.Create(member.rank());
    if (!transport.ok()) return transport.status().ToString();
    return RunCase<float>(**transport, {DataType::kFloat, {TensorShape({10})}, false}, 1, 0);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(results[r].report, ::testing::Not(HasSubstr(":"))) << results[r].report;
    EXPECT_FALSE(SegmentExists(group.token(), r)) << "rank " << r;
  }
}

TEST(ShmTransportTest, MemberThatNeverAppearsIsDeadlineExceededAndLeavesNothing) {
  Group group(Kind::kShm, 3);
  auto transport = group.Create(0, std::chrono::milliseconds(200));
  ASSERT_FALSE(transport.ok());
  EXPECT_THAT(transport.status().ToString(), StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_THAT(transport.status().message(), HasSubstr("/job:worker/task:1 (rank 1)"));
  EXPECT_THAT(transport.status().message(), HasSubstr("/job:worker/task:2 (rank 2)"));
  EXPECT_FALSE(SegmentExists(group.token(), 0));
}

TEST(ShmTransportTest, FullDevShmIsResourceExhausted) {
  Group group(Kind::kShm, 1);
  group.shm_tuning.slot_bytes = size_t{1} << 44;  // 32 TiB: more than any /dev/shm holds
  auto transport = group.Create(0, std::chrono::milliseconds(200));
  ASSERT_FALSE(transport.ok());
  EXPECT_THAT(transport.status().ToString(), StartsWith("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(transport.status().message(), HasSubstr("/job:worker/task:0"));
  EXPECT_FALSE(SegmentExists(group.token(), 0));
}

TEST(ShmTransportTest, TensorsOfManySlotsGoThroughInChunks) {
  const int n = 3;
  Group group(Kind::kShm, n);
  group.shm_tuning.slot_bytes = 4096;
  group.shm_tuning.small_bytes = 1024;
  auto results = RunMembers(n, [&](const MemberContext& member) -> std::string {
    auto transport = group.Create(member.rank());
    if (!transport.ok()) return transport.status().ToString();
    std::string report = "OK ";
    const Case cases[] = {{DataType::kFloat, {TensorShape({100003})}, false, false},
                          {DataType::kDouble, {TensorShape({5001}), TensorShape({7})}, true},
                          {DataType::kFloat, {TensorShape({200})}, false}};
    for (int i = 0; i < 3; ++i) {
      const Case& c = cases[i];
      std::string got = c.dtype == DataType::kFloat ? RunCase<float>(**transport, c, 1, i)
                                                    : RunCase<double>(**transport, c, 1, i);
      if (got.find(':') != std::string::npos || got.rfind("WRONG", 0) == 0) return got;
      report += got;
    }
    Tensor value(DataType::kFloat, TensorShape({30001}));
    for (int64_t i = 0; i < 30001; ++i) value.data<float>()[i] = member.rank() == 1 ? i : -1;
    Status status = (*transport)->Broadcast(TransportOp{2, 0, "bcast"}, 1, &value);
    if (!status.ok()) return status.ToString();
    for (int64_t i = 0; i < 30001; ++i) {
      if (value.data<float>()[i] != static_cast<float>(i)) return "WRONG broadcast";
    }
    Tensor gathered;
    status = (*transport)->AllGather(TransportOp{3, 0, "gather"}, value, &gathered);
    if (!status.ok()) return status.ToString();
    return report + transport_testing::Digest(gathered);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_THAT(results[r].report, StartsWith("OK")) << "member " << r;
    EXPECT_EQ(results[r].report, results[0].report);
  }
}

}  // namespace
}  // namespace weft
