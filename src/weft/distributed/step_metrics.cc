#include "weft/distributed/step_metrics.h"

#include "weft/core/metrics.h"

namespace weft {

void RecordStep(const std::string& role, const Status& status,
                std::chrono::steady_clock::time_point started) {
  static metrics::CounterFamily* const steps = metrics::Registry::Global().FindOrAddCounter(
      "weft_steps_total", "Steps run, by role (master: RunStep, worker: RunGraph) and outcome.",
      {"role", "code"});
  static metrics::HistogramFamily* const seconds = metrics::Registry::Global().FindOrAddHistogram(
      "weft_step_seconds", "Time from a step's request to its answer, by role.", {"role"});
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  steps->WithLabels({role, std::string(CodeName(status.code()))})->Increment();
  seconds->WithLabels({role})->Observe(took);
}

}  // namespace weft
