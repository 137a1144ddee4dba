#include "weft/train/step_phase_monitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/metrics.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

StragglerDetector::Options Detector() {
  return {.window = 5,
          .warmup_steps = 2,
          .ratio = 1.15,
          .min_difference_seconds = 1e-3,
          .confirmations = 2};
}

TEST(StragglerDetectorTest, NamesAWorkerTwentyPercentSlowerWithinTenSteps) {
  StragglerDetector detector(3, Detector());
  std::vector<Straggler> named;
  int64_t named_at = -1;
  for (int64_t step = 1; step <= 20 && named.empty(); ++step) {
    // Worker 2 computes 20% longer from step 1, with a little noise on everyone.
    const double noise = (step % 3) * 0.0002;
    named = detector.Observe(step, {0.010 + noise, 0.0101 - noise, 0.012 + noise});
    if (!named.empty()) named_at = step;
  }
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].worker, 2);
  EXPECT_LE(named_at, 10);
  EXPECT_EQ(named[0].last_step, named_at);
  EXPECT_EQ(named[0].first_step, named_at - 4);
  EXPECT_NEAR(named[0].compute_seconds / named[0].others_seconds, 1.2, 0.05);
}

TEST(StragglerDetectorTest, EvenWorkersAndTinyDifferencesNameNobody) {
  StragglerDetector detector(2, Detector());
  for (int64_t step = 1; step <= 50; ++step) {
    // 5-10% apart, or 50% apart on steps of 100 us (below the minimum difference of 1 ms).
    EXPECT_TRUE(detector.Observe(step, {0.010, step % 2 == 0 ? 0.0105 : 0.011}).empty());
  }
  StragglerDetector tiny(2, Detector());
  for (int64_t step = 1; step <= 50; ++step) {
    EXPECT_TRUE(tiny.Observe(step, {0.0001, 0.00015}).empty());
  }
}

TEST(StragglerDetectorTest, ABurstShorterThanTheConfirmationsNamesNobody) {
  StragglerDetector detector(2, Detector());
  for (int64_t step = 1; step <= 40; ++step) {
    // Worker 0 is slow on steps 11, 13 and 15: a majority of one window (steps 11-15) only.
    const bool burst = step == 11 || step == 13 || step == 15;
    EXPECT_TRUE(detector.Observe(step, {burst ? 0.02 : 0.01, 0.01}).empty()) << step;
  }
}

TEST(StragglerDetectorTest, NamesOnceThenAgainAfterRecovering) {
  StragglerDetector detector(2, Detector());
  int namings = 0;
  for (int64_t step = 1; step <= 60; ++step) {
    // Slow for steps 1-20 and 41-60, even in between.
    const bool slow = step <= 20 || step > 40;
    namings += static_cast<int>(detector.Observe(step, {0.010, slow ? 0.013 : 0.010}).size());
  }
  EXPECT_EQ(namings, 2);
}

TEST(StragglerDetectorTest, WarmUpStepsAreIgnoredAndOneWorkerNeverNamed) {
  StragglerDetector detector(2, Detector());
  // A slow first step (kernels built) on worker 0 only: ignored.
  EXPECT_TRUE(detector.Observe(1, {1.0, 0.01}).empty());
  EXPECT_TRUE(detector.Observe(2, {1.0, 0.01}).empty());
  for (int64_t step = 3; step <= 20; ++step) {
    EXPECT_TRUE(detector.Observe(step, {0.01, 0.01}).empty());
  }
  StragglerDetector alone(1, Detector());
  for (int64_t step = 1; step <= 20; ++step) EXPECT_TRUE(alone.Observe(step, {0.01}).empty());
  // A step of the wrong width is ignored, not read out of bounds.
  EXPECT_TRUE(detector.Observe(21, {0.5}).empty());
}

// Two workers simulated in one process: the gather returns this worker's phases and a fixed
// peer's, as the collective would.
TEST(StepPhaseMonitorTest, SplitsStepsGathersAndNamesTheStraggler) {
  int64_t communication_nanos = 0;
  std::vector<std::string> lines;
  std::vector<std::vector<double>> sent;
  StepPhaseMonitor monitor(
      {.workers = {"/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"},
       .communication_nanos = [&] { return communication_nanos; },
       .all_gather =
           [&](const std::vector<double>& mine) -> StatusOr<std::vector<std::vector<double>>> {
         sent.push_back(mine);
         // The peer computes 30 ms, waits 2 ms for collectives and 1 ms for input.
         return std::vector<std::vector<double>>{mine, {0.030, 0.002, 0.001, 0.0}};
       },
       .on_straggler = [&](const std::string& line) { lines.push_back(line); },
       .stop_requested = nullptr,
       .detector = Detector()});
  for (int step = 1; step <= 12; ++step) {
    // This worker: 40 ms steps, 15 ms of them in collectives, 3 ms waiting for input.
    communication_nanos += 15'000'000;
    const Logs logs = {{"step", step}, {"seconds", 0.040}, {"input_seconds", 0.003}};
    ASSERT_TRUE(monitor.RecordStep(logs).ok());
  }
  ASSERT_EQ(sent.size(), 12u);
  EXPECT_NEAR(sent[0][0], 0.025, 1e-9);
  EXPECT_NEAR(sent[0][1], 0.015, 1e-9);
  EXPECT_NEAR(sent[0][2], 0.003, 1e-9);
  EXPECT_EQ(sent[0][3], 0.0);  // no stop asked for
  EXPECT_FALSE(monitor.stopped_on_request());
  const std::vector<StepPhases> means = monitor.MeanPhases();
  ASSERT_EQ(means.size(), 2u);
  EXPECT_NEAR(means[0].compute, 0.025, 1e-9);
  EXPECT_NEAR(means[1].communication, 0.002, 1e-9);
  // The peer computes 20% longer (30 against 25 ms): named once, after the warm-up and a window.
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("worker 1 (/job:worker/replica:0/task:1)"));
  EXPECT_THAT(lines[0], HasSubstr("20% longer"));
  EXPECT_THAT(lines[0], HasSubstr("steps 4-8"));
  ASSERT_EQ(monitor.stragglers().size(), 1u);
  const std::string text = metrics::Registry::Global().ExportText();
  EXPECT_THAT(text, HasSubstr("weft_step_phase_seconds_count{worker=\"1\",phase=\"compute\"} 10"));
  EXPECT_THAT(text, HasSubstr("weft_stragglers_named_total{worker=\"1\"} 1"));
}

// Elastic training: one worker asking to stop (a worker waits to join) stops every worker after the
// same step, since each sees the others' requests in the gather.
TEST(StepPhaseMonitorTest, AStopAskedForByAnyWorkerIsSeenByAll) {
  bool peer_asks = false;
  bool i_ask = false;
  StepPhaseMonitor monitor(
      {.workers = {"a", "b"},
       .communication_nanos = [] { return int64_t{0}; },
       .all_gather =
           [&](const std::vector<double>& mine) -> StatusOr<std::vector<std::vector<double>>> {
         return std::vector<std::vector<double>>{mine, {0.01, 0.0, 0.0, peer_asks ? 1.0 : 0.0}};
       },
       .on_straggler = nullptr,
       .stop_requested = [&] { return i_ask; },
       .detector = Detector()});
  ASSERT_TRUE(monitor.RecordStep({{"step", 1}, {"seconds", 0.01}}).ok());
  EXPECT_FALSE(monitor.stopped_on_request());
  peer_asks = true;
  ASSERT_TRUE(monitor.RecordStep({{"step", 2}, {"seconds", 0.01}}).ok());
  EXPECT_TRUE(monitor.stopped_on_request());

  StepPhaseMonitor asking({.workers = {"a", "b"},
                           .communication_nanos = [] { return int64_t{0}; },
                           .all_gather = [&](const std::vector<double>& mine)
                               -> StatusOr<std::vector<std::vector<double>>> {
                             EXPECT_EQ(mine.size(), 4u);
                             return std::vector<std::vector<double>>{mine, {0.01, 0.0, 0.0, 0.0}};
                           },
                           .on_straggler = nullptr,
                           .stop_requested = [&] { return i_ask; },
                           .detector = Detector()});
  i_ask = true;
  ASSERT_TRUE(asking.RecordStep({{"step", 1}, {"seconds", 0.01}}).ok());
  EXPECT_TRUE(asking.stopped_on_request());
}

TEST(StepPhaseMonitorTest, AFailedGatherNamesTheStep) {
  StepPhaseMonitor monitor(
      {.workers = {"a", "b"},
       .communication_nanos = [] { return int64_t{0}; },
       .all_gather = [](const std::vector<double>&) -> StatusOr<std::vector<std::vector<double>>> {
         return Unavailable("task b stopped answering the heartbeat");
       },
       .on_straggler = nullptr,
       .stop_requested = nullptr,
       .detector = Detector()});
  const Status status = monitor.RecordStep({{"step", 7}, {"seconds", 0.01}});
  EXPECT_TRUE(IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("after step 7"));
  EXPECT_THAT(status.message(), HasSubstr("task b"));
}

}  // namespace
}  // namespace weft::train
