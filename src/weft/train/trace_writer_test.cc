// TraceWriter in Model::Fit: traces exactly its range of global steps, writes one trace file as
// soon as the range's last step is traced (or at the end when the run stops before), keeps each
// step's compute and communication times, leaves other callbacks' traced steps alone; and
// ParseTraceSteps and TracePathForTask.
#include "weft/train/trace_writer.h"

#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/runtime/testing/timeline_test_util.h"
#include "weft/train/testing/model_test_util.h"
#include "weft/train/train_loop.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

// Records which steps Fit traced for anyone, and whether the file existed after each step.
class Watcher final : public Callback {
 public:
  explicit Watcher(std::string path) : path_(std::move(path)) {}
  Status OnTrainBatchTraced(Model& model, const proto::StepStats&, int64_t, int64_t) override {
    traced.insert(model.position().global_step);
    return Status::OK();
  }
  Status OnTrainBatchEnd(Model& model, const Logs&) override {
    if (first_step_with_file < 0 && io::PathExists(path_)) {
      first_step_with_file = model.position().global_step;
    }
    return Status::OK();
  }
  std::set<int64_t> traced;
  int64_t first_step_with_file = -1;

 private:
  std::string path_;
};

std::set<std::string> StepNames(const ::weft::testing::ParsedTrace& trace) {
  std::set<std::string> names;
  for (const nlohmann::json& event : trace.complete) {
    if (event["cat"] == "step") names.insert(event["name"].get<std::string>());
  }
  return names;
}

TEST(TraceWriterTest, TracesItsRangeAndWritesOnceTheLastStepIsTraced) {
  io::testing::TempDir dir;
  const std::string path = dir.File("trace.json");
  TraceWriter writer({.path = path, .first_step = 3, .last_step = 5, .task_name = ""});
  Watcher watcher(path);
  auto mirrored = testing::Mirrored(2);
  testing::TrainedClassifier trained =
      testing::TrainClassifier(mirrored.get(), {&writer, &watcher});
  ASSERT_TRUE(trained.status.ok()) << trained.status;
  EXPECT_EQ(watcher.traced, (std::set<int64_t>{3, 4, 5}));
  EXPECT_EQ(watcher.first_step_with_file, 5);
  ASSERT_EQ(writer.traced_steps().size(), 3u);
  for (const TracedStepTimes& step : writer.traced_steps()) {
    EXPECT_GT(step.compute_ms, 0);
    EXPECT_GT(step.communication_ms, 0);  // the replicas' all-reduce
    EXPECT_LE(step.overlap_ms, std::min(step.compute_ms, step.communication_ms));
  }
  const ::weft::testing::ParsedTrace trace =
      ::weft::testing::ParseTrace(io::testing::ReadBytes(path));
  EXPECT_EQ(StepNames(trace), (std::set<std::string>{"step 3", "step 4", "step 5"}));
  EXPECT_FALSE(trace.EventsOnDevice("/job:localhost/replica:0/task:0/device:CPU:1").empty());
}

TEST(TraceWriterTest, ARangePastTheRunIsWrittenAtTheEnd) {
  io::testing::TempDir dir;
  const std::string path = dir.File("late.json");
  // TrainClassifier runs 12 steps.
  TraceWriter writer(
      {.path = path, .first_step = 11, .last_step = 40, .task_name = "/job:w/replica:0/task:3"});
  testing::TrainedClassifier trained = testing::TrainClassifier(nullptr, {&writer});
  ASSERT_TRUE(trained.status.ok()) << trained.status;
  EXPECT_TRUE(writer.written());
  ASSERT_EQ(writer.traced_steps().size(), 2u);
  const ::weft::testing::ParsedTrace trace =
      ::weft::testing::ParseTrace(io::testing::ReadBytes(path));
  EXPECT_EQ(StepNames(trace), (std::set<std::string>{"step 11", "step 12"}));
  // The local session's devices show under the task the writer was given.
  EXPECT_FALSE(trace.EventsOnDevice("/job:w/replica:0/task:3/device:CPU:0").empty());
}

TEST(TraceWriterTest, ParsesStepRangesAndRefusesBadOnes) {
  using Range = std::pair<int64_t, int64_t>;
  EXPECT_EQ(ParseTraceSteps("11:15").value(), Range(11, 15));
  EXPECT_EQ(ParseTraceSteps("7").value(), Range(7, 7));
  for (const char* bad : {"5:2", "0:3", "a:b", "3:", ":3", "1:2:3", "", "-1:2"}) {
    StatusOr<std::pair<int64_t, int64_t>> parsed = ParseTraceSteps(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_TRUE(IsInvalidArgument(parsed.status()));
    EXPECT_THAT(parsed.status().message(), HasSubstr(StrCat("'", bad, "'")));
  }
}

TEST(TraceWriterTest, EachWorkerWritesAFileOfItsOwn) {
  EXPECT_EQ(TracePathForTask("/tmp/trace.json", 0), "/tmp/trace.json");
  EXPECT_EQ(TracePathForTask("/tmp/trace.json", 2), "/tmp/trace.task2.json");
  EXPECT_EQ(TracePathForTask("/tmp/trace", 1), "/tmp/trace.task1");
}

}  // namespace
}  // namespace weft::train
