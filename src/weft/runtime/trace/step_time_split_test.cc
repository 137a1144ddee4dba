// SplitStepTime: compute and communication are unions of intervals over every device (two ops
// overlapping on two devices count once), RPC events count in neither, and the overlap is the
// intersection of the two unions.
#include "weft/runtime/trace/step_time_split.h"

#include <gtest/gtest.h>

#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {
namespace {

void AddEvent(proto::DeviceStepStats* device, proto::NodeExecStats::Kind kind, int64_t start,
              int64_t end) {
  proto::NodeExecStats* event = device->add_node_stats();
  event->set_kind(kind);
  SetStatsTimes(start, end, event);
}

TEST(StepTimeSplitTest, UnionsOverDevicesAndTheirIntersection) {
  constexpr int64_t kBase = 1'700'000'000'000'000'000;
  proto::StepStats stats;
  proto::DeviceStepStats* cpu0 = stats.add_dev_stats();
  proto::DeviceStepStats* cpu1 = stats.add_dev_stats();
  // Compute: [0, 100) on CPU:0 and [50, 150) on CPU:1 -> 150; [300, 400) -> 250 in all.
  AddEvent(cpu0, proto::NodeExecStats::COMPUTE, kBase, kBase + 100);
  AddEvent(cpu1, proto::NodeExecStats::COMPUTE, kBase + 50, kBase + 150);
  AddEvent(cpu0, proto::NodeExecStats::COMPUTE, kBase + 300, kBase + 400);
  // Communication: [120, 200) and [180, 320) -> [120, 320) = 200; overlap [120,150) + [300,320).
  AddEvent(cpu1, proto::NodeExecStats::RECV, kBase + 120, kBase + 200);
  AddEvent(cpu0, proto::NodeExecStats::COLLECTIVE, kBase + 180, kBase + 320);
  // The master's call spans everything and counts in neither.
  AddEvent(cpu0, proto::NodeExecStats::RPC, kBase - 10, kBase + 500);
  const StepTimeSplit split = SplitStepTime(stats);
  EXPECT_EQ(split.compute_nanos, 250);
  EXPECT_EQ(split.communication_nanos, 200);
  EXPECT_EQ(split.overlap_nanos, 50);
}

TEST(StepTimeSplitTest, AnEmptyStepIsAllZero) {
  const StepTimeSplit split = SplitStepTime(proto::StepStats());
  EXPECT_EQ(split.compute_nanos, 0);
  EXPECT_EQ(split.communication_nanos, 0);
  EXPECT_EQ(split.overlap_nanos, 0);
}

TEST(StepTimeSplitTest, ReadsMicrosecondsWhenNanosecondsAreMissing) {
  proto::StepStats stats;
  proto::NodeExecStats* event = stats.add_dev_stats()->add_node_stats();
  event->set_all_start_micros(10);
  event->set_op_end_rel_micros(7);
  EXPECT_EQ(EventStartNanos(*event), 10'000);
  EXPECT_EQ(EventEndNanos(*event), 17'000);
  EXPECT_EQ(SplitStepTime(stats).compute_nanos, 7'000);
}

}  // namespace
}  // namespace weft
