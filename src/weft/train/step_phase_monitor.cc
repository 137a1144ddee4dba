#include "weft/train/step_phase_monitor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "weft/core/str_util.h"

namespace weft::train {
namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string Milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f ms", seconds * 1e3);
  return text;
}

metrics::HistogramFamily* PhaseSeconds() {
  static metrics::HistogramFamily* const family = metrics::Registry::Global().FindOrAddHistogram(
      "weft_step_phase_seconds",
      "Each worker's time per training step in a phase: compute, communication (collectives, "
      "waiting for peers included) or input_wait, as every worker of the job gathers them.",
      {"worker", "phase"});
  return family;
}

metrics::CounterFamily* StragglersNamed() {
  static metrics::CounterFamily* const family = metrics::Registry::Global().FindOrAddCounter(
      "weft_stragglers_named_total",
      "Times a worker was named as computing slower than the median of the others.", {"worker"});
  return family;
}

}  // namespace

StragglerDetector::StragglerDetector(int workers, Options options)
    : options_(options),
      recent_(std::max(workers, 0)),
      slow_windows_(std::max(workers, 0), 0),
      named_(std::max(workers, 0), false) {}

std::vector<Straggler> StragglerDetector::Observe(int64_t step,
                                                  const std::vector<double>& compute_seconds) {
  std::vector<Straggler> newly_named;
  if (compute_seconds.size() != recent_.size() || recent_.size() < 2) return newly_named;
  if (++observed_ <= options_.warmup_steps) return newly_named;
  const size_t window = static_cast<size_t>(std::max(options_.window, 1));
  for (size_t w = 0; w < recent_.size(); ++w) {
    recent_[w].push_back(compute_seconds[w]);
    if (recent_[w].size() > window) recent_[w].pop_front();
  }
  recent_steps_.push_back(step);
  if (recent_steps_.size() > window) recent_steps_.pop_front();
  if (recent_steps_.size() < window) return newly_named;

  // Medians, not means: one step held up by the machine (a page fault, a preemption) moves no
  // worker's figure, a worker slower on every step does.
  std::vector<double> typical(recent_.size());
  for (size_t w = 0; w < recent_.size(); ++w) {
    typical[w] = Median({recent_[w].begin(), recent_[w].end()});
  }
  for (size_t w = 0; w < recent_.size(); ++w) {
    std::vector<double> others;
    for (size_t o = 0; o < typical.size(); ++o) {
      if (o != w) others.push_back(typical[o]);
    }
    const double median = Median(std::move(others));
    const bool slow = typical[w] >= options_.ratio * median &&
                      typical[w] - median >= options_.min_difference_seconds;
    slow_windows_[w] = slow ? slow_windows_[w] + 1 : 0;
    if (slow_windows_[w] < std::max(options_.confirmations, 1)) {
      named_[w] = false;
      continue;
    }
    if (!named_[w]) {
      newly_named.push_back({.worker = static_cast<int>(w),
                             .first_step = recent_steps_.front(),
                             .last_step = recent_steps_.back(),
                             .compute_seconds = typical[w],
                             .others_seconds = median});
    }
    named_[w] = true;
  }
  return newly_named;
}

StepPhaseMonitor::StepPhaseMonitor(Options options)
    : options_(std::move(options)),
      detector_(static_cast<int>(options_.workers.size()), options_.detector),
      sums_(options_.workers.size()) {
  for (size_t w = 0; w < options_.workers.size(); ++w) {
    const std::string worker = std::to_string(w);
    phase_series_.push_back({PhaseSeconds()->WithLabels({worker, "compute"}),
                             PhaseSeconds()->WithLabels({worker, "communication"}),
                             PhaseSeconds()->WithLabels({worker, "input_wait"})});
  }
}

Status StepPhaseMonitor::RecordStep(const Logs& logs) {
  auto value = [&logs](const char* key) {
    auto it = logs.find(key);
    return it == logs.end() ? 0.0 : it->second;
  };
  const int64_t step = static_cast<int64_t>(value("step"));
  const int64_t communication_nanos = options_.communication_nanos();
  StepPhases mine;
  mine.communication = static_cast<double>(communication_nanos - last_communication_nanos_) * 1e-9;
  mine.compute = std::max(0.0, value("seconds") - mine.communication);
  mine.input_wait = value("input_seconds");
  const double stop = options_.stop_requested && options_.stop_requested() ? 1.0 : 0.0;
  StatusOr<std::vector<std::vector<double>>> gathered =
      options_.all_gather({mine.compute, mine.communication, mine.input_wait, stop});
  if (!gathered.ok()) {
    return gathered.status().WithContext(
        StrCat("gathering the workers' step phases after step ", step));
  }
  // The gather's own time belongs to no step.
  last_communication_nanos_ = options_.communication_nanos();
  if (gathered->size() != options_.workers.size()) {
    return Internal("step phases gathered from ", gathered->size(), " workers, expected ",
                    options_.workers.size());
  }
  std::vector<double> compute(gathered->size());
  const bool counted = ++steps_ > options_.detector.warmup_steps;
  for (size_t w = 0; w < gathered->size(); ++w) {
    const std::vector<double>& phases = (*gathered)[w];
    if (phases.size() != 4) return Internal("worker ", w, " sent ", phases.size(), " values");
    compute[w] = phases[0];
    if (phases[3] > 0) stopped_on_request_ = true;
    if (!counted) continue;
    for (size_t phase = 0; phase < 3; ++phase) phase_series_[w][phase]->Observe(phases[phase]);
    sums_[w].compute += phases[0];
    sums_[w].communication += phases[1];
    sums_[w].input_wait += phases[2];
  }
  if (counted) ++summed_steps_;
  for (const Straggler& straggler : detector_.Observe(step, compute)) {
    StragglersNamed()->WithLabels({std::to_string(straggler.worker)})->Increment();
    stragglers_.push_back(straggler);
    if (options_.on_straggler) options_.on_straggler(Describe(straggler));
  }
  return Status::OK();
}

Status StepPhaseMonitor::OnTrainBatchEnd(Model& model, const Logs& logs) {
  WEFT_RETURN_IF_ERROR(RecordStep(logs));
  if (stopped_on_request_) model.StopTraining();
  return Status::OK();
}

std::vector<StepPhases> StepPhaseMonitor::MeanPhases() const {
  std::vector<StepPhases> means = sums_;
  if (summed_steps_ == 0) return means;
  const double steps = static_cast<double>(summed_steps_);
  for (StepPhases& phases : means) {
    phases.compute /= steps;
    phases.communication /= steps;
    phases.input_wait /= steps;
  }
  return means;
}

std::string StepPhaseMonitor::Describe(const Straggler& straggler) const {
  const std::string& task = static_cast<size_t>(straggler.worker) < options_.workers.size()
                                ? options_.workers[straggler.worker]
                                : std::string("?");
  const double slower =
      straggler.others_seconds > 0 ? straggler.compute_seconds / straggler.others_seconds - 1 : 0;
  return StrCat("straggler: worker ", straggler.worker, " (", task, ") computed ",
                static_cast<int>(std::lround(slower * 100)), "% longer than the median of the ",
                "other workers over steps ", straggler.first_step, "-", straggler.last_step, " (",
                Milliseconds(straggler.compute_seconds), " against ",
                Milliseconds(straggler.others_seconds), " per step)");
}

}  // namespace weft::train
