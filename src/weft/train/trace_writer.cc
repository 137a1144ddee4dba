#include "weft/train/trace_writer.h"

#include <charconv>

#include "weft/core/str_util.h"
#include "weft/io/durable_file.h"
#include "weft/runtime/trace/step_time_split.h"
#include "weft/runtime/trace/timeline.h"

namespace weft::train {
namespace {

// The task of a local session's devices (runtime/device_factory.h's default prefix).
constexpr char kLocalTask[] = "/job:localhost/replica:0/task:0";

double Millis(int64_t nanos) { return static_cast<double>(nanos) / 1e6; }

}  // namespace

bool TraceWriter::TraceTrainBatch(int64_t step) { return !written_ && InRange(step); }

Status TraceWriter::OnTrainBatchTraced(Model& model, const proto::StepStats& stats,
                                       int64_t start_nanos, int64_t end_nanos) {
  // Fit passes every traced step to every callback; another may have asked for this one.
  const int64_t step = model.position().global_step;
  if (written_ || !InRange(step)) return Status::OK();
  const size_t offset = serialized_.size();
  if (options_.task_name.empty()) {
    if (!stats.AppendToString(&serialized_)) return Internal("cannot serialize step ", step);
  } else {
    proto::StepStats renamed = stats;
    RenameTask(kLocalTask, options_.task_name, &renamed);
    if (!renamed.AppendToString(&serialized_)) return Internal("cannot serialize step ", step);
  }
  kept_.push_back({.step = step,
                   .offset = offset,
                   .size = serialized_.size() - offset,
                   .start_nanos = start_nanos,
                   .end_nanos = end_nanos});
  const StepTimeSplit split = SplitStepTime(stats);
  traced_.push_back({.step = step,
                     .wall_ms = Millis(end_nanos - start_nanos),
                     .compute_ms = Millis(split.compute_nanos),
                     .communication_ms = Millis(split.communication_nanos),
                     .overlap_ms = Millis(split.overlap_nanos)});
  if (step == options_.last_step) return Write();
  return Status::OK();
}

Status TraceWriter::OnTrainEnd(Model&) { return written_ ? Status::OK() : Write(); }

Status TraceWriter::Write() {
  written_ = true;
  Timeline timeline;
  for (const KeptStep& kept : kept_) {
    proto::StepStats stats;
    if (!stats.ParseFromArray(serialized_.data() + kept.offset, static_cast<int>(kept.size))) {
      return Internal("the kept trace of step ", kept.step, " does not parse");
    }
    timeline.AddStep(kept.step, std::move(stats), kept.start_nanos, kept.end_nanos);
  }
  std::string().swap(serialized_);
  Status status = io::WriteFileDurably(options_.path, timeline.ToJson());
  if (!status.ok()) return status.WithContext(StrCat("writing the trace ", options_.path));
  return Status::OK();
}

StatusOr<std::pair<int64_t, int64_t>> ParseTraceSteps(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument("--trace-steps '", text, "': ", why);
  };
  auto parse = [](std::string_view part, int64_t* value) {
    const char* end = part.data() + part.size();
    auto [ptr, error] = std::from_chars(part.data(), end, *value);
    return error == std::errc() && ptr == end && !part.empty();
  };
  const size_t colon = text.find(':');
  int64_t first = 0, last = 0;
  if (!parse(text.substr(0, colon), &first) ||
      (colon != std::string_view::npos && !parse(text.substr(colon + 1), &last))) {
    return bad("expected FIRST:LAST, two step numbers such as 11:15");
  }
  if (colon == std::string_view::npos) last = first;
  if (first < 1) return bad("steps count from 1");
  if (last < first) return bad("LAST is before FIRST");
  return std::make_pair(first, last);
}

}  // namespace weft::train
