#include "weft/core/metrics.h"

#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace weft::metrics {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, CounterSeriesAreKeptApartByLabels) {
  CounterFamily family("test_bytes_total", "Bytes.", {"peer"});
  family.WithLabels({"/job:worker/replica:0/task:1"})->Increment(100);
  family.WithLabels({"/job:worker/replica:0/task:1"})->Increment(5);
  family.WithLabels({"a\"b\\c\nd"})->Increment();
  std::string text;
  family.AppendText(&text);
  EXPECT_EQ(text,
            "# HELP test_bytes_total Bytes.\n"
            "# TYPE test_bytes_total counter\n"
            "test_bytes_total{peer=\"/job:worker/replica:0/task:1\"} 105\n"
            "test_bytes_total{peer=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithInfAndSum) {
  HistogramFamily family("test_seconds", "Time.", {}, {0.001, 0.5, 2});
  Histogram* series = family.WithLabels({});
  series->Observe(0.0005);
  series->Observe(0.5);  // on a bound: counts in that bucket (le means "less or equal")
  series->Observe(3);
  std::string text;
  family.AppendText(&text);
  EXPECT_EQ(text,
            "# HELP test_seconds Time.\n"
            "# TYPE test_seconds histogram\n"
            "test_seconds_bucket{le=\"0.001\"} 1\n"
            "test_seconds_bucket{le=\"0.5\"} 2\n"
            "test_seconds_bucket{le=\"2\"} 2\n"
            "test_seconds_bucket{le=\"+Inf\"} 3\n"
            "test_seconds_sum 3.5005\n"
            "test_seconds_count 3\n");
}

TEST(MetricsTest, RegistryGivesTheSameFamilyForTheSameName) {
  Registry& registry = Registry::Global();
  CounterFamily* first = registry.FindOrAddCounter("test_registry_total", "Once.", {"method"});
  CounterFamily* second = registry.FindOrAddCounter("test_registry_total", "Once.", {"method"});
  EXPECT_EQ(first, second);
  first->WithLabels({"RunGraph"})->Increment(7);
  EXPECT_THAT(registry.ExportText(), HasSubstr("test_registry_total{method=\"RunGraph\"} 7\n"));
}

TEST(MetricsTest, ConcurrentRecordingLosesNothing) {
  HistogramFamily family("test_concurrent_seconds", "Time.", {"thread"}, LatencyBuckets());
  CounterFamily counter("test_concurrent_total", "Count.", {});
  constexpr int kThreads = 4;
  constexpr int kEach = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&family, &counter, t] {
      for (int i = 0; i < kEach; ++i) {
        family.WithLabels({std::to_string(t % 2)})->Observe(0.001);
        counter.WithLabels({})->Increment();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter.WithLabels({})->value(), kThreads * kEach);
  EXPECT_EQ(family.WithLabels({"0"})->count() + family.WithLabels({"1"})->count(),
            kThreads * kEach);
  EXPECT_NEAR(family.WithLabels({"0"})->sum(), kThreads * kEach / 2 * 0.001, 1e-6);
}

}  // namespace
}  // namespace weft::metrics
