#include "weft/runtime/trace/step_breakdown.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace weft {
namespace {

using ::testing::HasSubstr;

// The line of `text` that starts with `prefix` ("" when none does).
std::string LineStartingWith(const std::string& text, const std::string& prefix) {
  size_t start = text.rfind("\n" + prefix);
  if (start == std::string::npos) return "";
  start += 1;
  return text.substr(start, text.find('\n', start) - start);
}

constexpr int64_t kMs = 1000000;  // nanoseconds

void AddOp(proto::DeviceStepStats* device, const std::string& op, int64_t start, int64_t end) {
  proto::NodeExecStats* node = device->add_node_stats();
  node->set_node_name(op + "_node");
  node->set_op(op);
  node->set_all_start_nanos(start);
  node->set_op_end_rel_nanos(end - start);
}

TEST(StepBreakdownTest, SplitsEachDevicesStepIntoOpsAndWaiting) {
  StepBreakdown breakdown;
  for (int step = 0; step < 2; ++step) {
    const int64_t t0 = (step + 1) * 100 * kMs;  // the Run starts at t0 and ends at t0 + 10 ms
    proto::StepStats stats;
    proto::DeviceStepStats* cpu0 = stats.add_dev_stats();
    cpu0->set_device("CPU:0");
    // 1 ms before the first op; MatMuls overlapping on two threads (1-4 and 2-5 ms: 4 ms busy);
    // 2 ms waiting; a 1 ms all-reduce; 2 ms after the last op.
    AddOp(cpu0, "MatMul", t0 + 1 * kMs, t0 + 4 * kMs);
    AddOp(cpu0, "MatMul", t0 + 2 * kMs, t0 + 5 * kMs);
    AddOp(cpu0, "CollectiveAllReduce", t0 + 7 * kMs, t0 + 8 * kMs);
    proto::DeviceStepStats* cpu1 = stats.add_dev_stats();
    cpu1->set_device("CPU:1");
    AddOp(cpu1, "Relu", t0, t0 + 10 * kMs);
    breakdown.AddStep(stats, t0, t0 + 10 * kMs);
  }
  EXPECT_EQ(breakdown.steps(), 2);
  const std::string text = breakdown.ToString();
  EXPECT_NE(text.find("over 2 traced steps: 10.000 ms per step (wall)"), std::string::npos) << text;
  EXPECT_NE(text.find("CPU:0: ops ran 5.000 ms per step (50%), none ran 5.000 ms: 1.000 ms before "
                      "the first op, 2.000 ms between ops, 2.000 ms after the last"),
            std::string::npos)
      << text;
  // Two MatMuls of 3 ms each per step: op time adds up even where they overlap.
  const std::string matmul = LineStartingWith(text, "  MatMul ");
  EXPECT_THAT(matmul, HasSubstr(" 6.000 ms ")) << text;
  EXPECT_THAT(matmul, HasSubstr(" 2.0 per step")) << text;
  EXPECT_NE(text.find("CPU:1: ops ran 10.000 ms per step (100%), none ran 0.000 ms"),
            std::string::npos)
      << text;
}

TEST(StepBreakdownTest, LumpsTheCheapestOpsTogether) {
  StepBreakdown breakdown;
  proto::StepStats stats;
  proto::DeviceStepStats* cpu = stats.add_dev_stats();
  cpu->set_device("CPU:0");
  AddOp(cpu, "A", 0, 3 * kMs);
  AddOp(cpu, "B", 3 * kMs, 5 * kMs);
  AddOp(cpu, "C", 5 * kMs, 6 * kMs);
  breakdown.AddStep(stats, 0, 6 * kMs);
  const std::string text = breakdown.ToString(/*top_ops=*/1);
  EXPECT_THAT(LineStartingWith(text, "  A "), HasSubstr(" 3.000 ms ")) << text;
  EXPECT_EQ(LineStartingWith(text, "  B "), "") << text;
  const std::string other = LineStartingWith(text, "  (other ops) ");
  EXPECT_THAT(other, HasSubstr(" 3.000 ms ")) << text;
  EXPECT_THAT(other, HasSubstr(" 2.0 per step")) << text;
}

TEST(StepBreakdownTest, NothingTraced) {
  EXPECT_EQ(StepBreakdown().ToString(), "no traced steps\n");
}

}  // namespace
}  // namespace weft
