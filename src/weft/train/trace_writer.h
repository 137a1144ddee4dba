// TraceWriter: a Fit callback that traces the training steps first_step..last_step (global
// steps, counting from 1; every op of every device of every task, RunOptions FULL_TRACE) and
// writes them all to one Chrome trace-event JSON file (runtime/trace/timeline.h) that Perfetto and
// chrome://tracing open. It writes once the last step of the range is traced, or at the end of
// training when the run stopped before (a range past the run's end gives a trace without steps).
// It also keeps each traced step's compute, communication and overlap times
// (runtime/trace/step_time_split.h). Not thread-safe: Fit calls it from its own thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/train/callbacks.h"

namespace weft::train {

// The default range: 5 steps after 10 untraced ones, so that first-step costs (kernels built,
// oneDNN primitives created, connections opened) stay out of the trace.
inline constexpr int64_t kDefaultTraceFirstStep = 11;
inline constexpr int64_t kDefaultTraceLastStep = 15;

struct TraceWriterOptions {
  std::string path;  // the trace file, replaced
  int64_t first_step = kDefaultTraceFirstStep;
  int64_t last_step = kDefaultTraceLastStep;
  // When set, the devices of the local session's task ("/job:localhost/replica:0/task:0") show
  // under this task instead: a worker of a multi-worker job ("/job:worker/replica:0/task:1").
  std::string task_name;
};

// One traced step's times, in milliseconds.
struct TracedStepTimes {
  int64_t step = 0;
  double wall_ms = 0;
  double compute_ms = 0;
  double communication_ms = 0;
  double overlap_ms = 0;
};

class TraceWriter final : public Callback {
 public:
  explicit TraceWriter(TraceWriterOptions options) : options_(std::move(options)) {}

  bool TraceTrainBatch(int64_t step) override;
  Status OnTrainBatchTraced(Model& model, const proto::StepStats& stats, int64_t start_nanos,
                            int64_t end_nanos) override;
  Status OnTrainEnd(Model& model) override;

  const std::vector<TracedStepTimes>& traced_steps() const { return traced_; }
  bool written() const { return written_; }

 private:
  bool InRange(int64_t step) const {
    return step >= options_.first_step && step <= options_.last_step;
  }
  // Writes the file; an error names it.
  Status Write();

  // Where one traced step's serialized StepStats lie in `serialized_`.
  struct KeptStep {
    int64_t step = 0;
    size_t offset = 0;
    size_t size = 0;
    int64_t start_nanos = 0;
    int64_t end_nanos = 0;
  };

  TraceWriterOptions options_;
  // The traced steps' StepStats, serialized back to back until Write() builds the timeline. Kept
  // as protos, their many small blocks would take the memory the next step's large buffers (the
  // batch) came from, and every traced step would then fault fresh pages in: a third slower on
  // W1 with every step traced, where one growing buffer costs nothing measurable.
  std::string serialized_;
  std::vector<KeptStep> kept_;
  std::vector<TracedStepTimes> traced_;
  bool written_ = false;
};

// Parses "FIRST:LAST" (1 <= FIRST <= LAST), or "N" for one step; InvalidArgument quoting `text`.
StatusOr<std::pair<int64_t, int64_t>> ParseTraceSteps(std::string_view text);

}  // namespace weft::train
