// What only the shared-memory transport promises: segments leave nothing in /dev/shm, a full
// /dev/shm is a Status, and tensors far larger than a slot go through in many chunks.
#include "weft/distributed/collective/shm_transport.h"

#include <cerrno>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include "weft/distributed/collective/internal/shm_segment.h"
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
using testing::RunCase;
using testing::RunCases;

using ::testing::HasSubstr;
using ::testing::StartsWith;

bool SegmentExists(const std::string& token, int rank) {
  const std::string name = internal::ShmSegmentName(token, rank);
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd >= 0) close(fd);
  return fd >= 0 || errno != ENOENT;
}

TEST(ShmTransportTest, ConnectedGroupLeavesNothingInDevShm) {
  Group group("shm", 3);
  auto results = group.Run([&](const MemberContext& member) -> std::string {
    return RunCase<float>(member.transport(), {DataType::kFloat, {TensorShape({10})}, false}, 1, 0);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(results[r].report, ::testing::Not(HasSubstr(":"))) << results[r].report;
    EXPECT_FALSE(SegmentExists(group.token(), r)) << "rank " << r;
  }
}

TEST(ShmTransportTest, MemberThatNeverAppearsIsDeadlineExceededAndLeavesNothing) {
  Group group("shm", 3);
  auto transport = group.Create(0, std::chrono::milliseconds(200));
  ASSERT_FALSE(transport.ok());
  EXPECT_THAT(transport.status().ToString(), StartsWith("DEADLINE_EXCEEDED"));
  EXPECT_THAT(transport.status().message(), HasSubstr("/job:worker/task:1 (rank 1)"));
  EXPECT_THAT(transport.status().message(), HasSubstr("/job:worker/task:2 (rank 2)"));
  EXPECT_FALSE(SegmentExists(group.token(), 0));
}

TEST(ShmTransportTest, FullDevShmIsResourceExhausted) {
  Group group("shm", 1);
  group.tuning.shm.slot_bytes = size_t{1} << 44;  // 32 TiB: more than any /dev/shm holds
  auto transport = group.Create(0, std::chrono::milliseconds(200));
  ASSERT_FALSE(transport.ok());
  EXPECT_THAT(transport.status().ToString(), StartsWith("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(transport.status().message(), HasSubstr("/job:worker/task:0"));
  EXPECT_FALSE(SegmentExists(group.token(), 0));
}

TEST(ShmTransportTest, TensorsOfManySlotsGoThroughInChunks) {
  const int n = 3;
  Group group("shm", n);
  group.tuning.shm.slot_bytes = 4096;
  group.tuning.shm.small_bytes = 1024;
  const std::vector<Case> cases = {
      {DataType::kFloat, {TensorShape({100003})}, false, false},
      {DataType::kDouble, {TensorShape({5001}), TensorShape({7})}, true},
      {DataType::kFloat, {TensorShape({200})}, false}};
  auto results = group.Run([&](const MemberContext& member) -> std::string {
    std::string report = RunCases(member.transport(), cases, 1);
    if (IsFailure(report)) return report;
    // Chunked broadcast and all-gather: 30001 floats and 10001 x 3 floats span many slots.
    if (!AppendDigests(BroadcastDigest(member.transport(), 1, 30001, 0), &report)) return report;
    AppendDigests(AllGatherDigest(member.transport(), 10001, 0), &report);
    return report;
  });
  ExpectAllOkAndIdentical(results);
}

}  // namespace
}  // namespace weft
