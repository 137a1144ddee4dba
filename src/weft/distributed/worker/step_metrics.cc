#include "weft/distributed/worker/step_metrics.h"

#include <chrono>
#include <utility>

#include "weft/core/metrics.h"

namespace weft {

StatusCallback CountedStep(std::string role, StatusCallback done) {
  static metrics::CounterFamily* const steps = metrics::Registry::Global().FindOrAddCounter(
      "weft_steps_total", "Steps run, by role (master: RunStep, worker: RunGraph) and outcome.",
      {"role", "code"});
  static metrics::HistogramFamily* const seconds = metrics::Registry::Global().FindOrAddHistogram(
      "weft_step_seconds", "Time from a step's request to its answer, by role.", {"role"});
  return [role = std::move(role), started = std::chrono::steady_clock::now(),
          done = std::move(done)](const Status& status) {
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    steps->WithLabels({role, std::string(CodeName(status.code()))})->Increment();
    seconds->WithLabels({role})->Observe(took);
    done(status);
  };
}

}  // namespace weft
