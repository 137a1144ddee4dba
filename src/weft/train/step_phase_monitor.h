// Always-on step-phase statistics of a multi-worker job and the straggler they reveal. After every
// step each worker splits the step into compute, communication (its collectives' time in transport
// operations, waiting for slower peers included) and input wait, and the workers gather everyone's
// split through one small operation of the collective group their gradients use (no RPC). Every
// worker thus sees the same figures, records them (weft_step_phase_seconds{worker,phase}), and
// names the same straggler: a worker whose typical compute over the last few steps exceeds the
// others' by a set ratio. docs/elastic.md tells how this fits the job's failure handling.
// Not thread-safe: Fit calls a callback from its own thread.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "weft/core/metrics.h"
#include "weft/core/statusor.h"
#include "weft/train/callbacks.h"

namespace weft::train {

// Where one step's wall time went on one worker, in seconds.
struct StepPhases {
  double compute = 0;        // the step's run minus its communication
  double communication = 0;  // in the collectives' transports, waiting for peers included
  double input_wait = 0;     // waiting for the step's batch
};

// A worker named as slower than the others.
struct Straggler {
  int worker = 0;          // its index in the job
  int64_t first_step = 0;  // the global steps of the window that named it
  int64_t last_step = 0;
  double compute_seconds = 0;  // its median compute per step over the window
  double others_seconds = 0;   // the median of the other workers' medians
};

// Names the worker whose median compute over the last `window` steps is at least `ratio` times
// the median of the other workers' (and at least `min_difference_seconds` more, so that the
// noise of sub-millisecond steps names nobody) in `confirmations` consecutive windows. A worker is
// named once, then again only after a window below the ratio.
class StragglerDetector {
 public:
  struct Options {
    int window = 5;
    int64_t warmup_steps = 2;  // first steps ignored (building kernels, forming groups)
    double ratio = 1.15;
    double min_difference_seconds = 1e-3;
    // Consecutive windows (sliding by a step) that must all find the worker slow: a machine's
    // burst of noise rarely lasts that long, a slow worker does.
    int confirmations = 2;
  };
  StragglerDetector(int workers, Options options);

  // Adds step `step`'s compute seconds of every worker (by index); returns the workers it names.
  std::vector<Straggler> Observe(int64_t step, const std::vector<double>& compute_seconds);

 private:
  const Options options_;
  std::vector<std::deque<double>> recent_;  // by worker, the last `window` steps
  std::deque<int64_t> recent_steps_;
  std::vector<int> slow_windows_;  // by worker: consecutive windows that found it slow
  std::vector<bool> named_;        // by worker: named and not yet back below the ratio
  int64_t observed_ = 0;
};

class StepPhaseMonitor final : public Callback {
 public:
  struct Options {
    std::vector<std::string> workers;  // task names by index
    // The worker collectives' time in transport operations so far (the change over a step is its
    // communication).
    std::function<int64_t()> communication_nanos;
    // Every worker's `values`, by worker index (one collective operation).
    std::function<StatusOr<std::vector<std::vector<double>>>(const std::vector<double>&)>
        all_gather;
    // A line naming a straggler, once per naming.
    std::function<void(const std::string&)> on_straggler;
    // Elastic training: whether this worker asks every worker to end Fit after this step (a worker
    // waits to join). Gathered with the phases, so that all stop after the same step. Null: never.
    std::function<bool()> stop_requested;
    StragglerDetector::Options detector;
  };
  explicit StepPhaseMonitor(Options options);

  Status OnTrainBatchEnd(Model& model, const Logs& logs) override;
  // One step's logs ("step", "seconds", "input_seconds"): splits, gathers, records, names.
  Status RecordStep(const Logs& logs);

  // Every worker's mean phases per step over the steps after the warm-up, by worker index.
  std::vector<StepPhases> MeanPhases() const;
  const std::vector<Straggler>& stragglers() const { return stragglers_; }
  // Whether some worker's stop_requested ended Fit after the last step recorded.
  bool stopped_on_request() const { return stopped_on_request_; }
  // "worker 1 (/job:worker/replica:0/task:1) computed 24% longer than the others ...".
  std::string Describe(const Straggler& straggler) const;

 private:
  const Options options_;
  StragglerDetector detector_;
  int64_t last_communication_nanos_ = 0;
  // By worker: its compute, communication and input_wait series of weft_step_phase_seconds.
  std::vector<std::array<metrics::Histogram*, 3>> phase_series_;
  std::vector<StepPhases> sums_;  // by worker, over the steps after the warm-up
  int64_t summed_steps_ = 0;
  int64_t steps_ = 0;
  std::vector<Straggler> stragglers_;
  bool stopped_on_request_ = false;
};

}  // namespace weft::train
