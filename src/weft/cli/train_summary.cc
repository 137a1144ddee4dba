#include "weft/cli/train_summary.h"

#include <vector>

namespace weft::cli {
namespace {

// Each traced step's times (docs/tracing.md says what they mean).
nlohmann::json TracedStepsJson(const std::vector<train::TracedStepTimes>& steps) {
  nlohmann::json list = nlohmann::json::array();
  for (const train::TracedStepTimes& step : steps) {
    list.push_back({{"step", step.step},
                    {"wall_ms", step.wall_ms},
                    {"compute_ms", step.compute_ms},
                    {"communication_ms", step.communication_ms},
                    {"overlap_ms", step.overlap_ms}});
  }
  return list;
}

// Every worker's mean phases per step, by worker index: {"compute": [..], ...} in milliseconds.
nlohmann::json StepPhasesJson(const std::vector<train::StepPhases>& phases) {
  nlohmann::json compute = nlohmann::json::array();
  nlohmann::json communication = nlohmann::json::array();
  nlohmann::json input_wait = nlohmann::json::array();
  for (const train::StepPhases& worker : phases) {
    compute.push_back(worker.compute * 1e3);
    communication.push_back(worker.communication * 1e3);
    input_wait.push_back(worker.input_wait * 1e3);
  }
  return {{"compute", compute}, {"communication", communication}, {"input_wait", input_wait}};
}

nlohmann::json StragglersJson(const std::vector<train::Straggler>& stragglers) {
  nlohmann::json list = nlohmann::json::array();
  for (const train::Straggler& straggler : stragglers) {
    list.push_back({{"worker", straggler.worker},
                    {"first_step", straggler.first_step},
                    {"last_step", straggler.last_step},
                    {"compute_ms", straggler.compute_seconds * 1e3},
                    {"others_compute_ms", straggler.others_seconds * 1e3}});
  }
  return list;
}

}  // namespace

nlohmann::json SummaryJson(const TrainFlags& flags, const train::TrainOptions& options,
                           const train::TrainSummary& summary, const char* fingerprint) {
  nlohmann::json json = {{"model", flags.model},
                         {"precision", flags.precision},
                         {"test_accuracy", summary.test_accuracy},
                         {"final_loss", summary.final_loss},
                         {"train_images_per_sec", summary.train_images_per_sec},
                         {"steps", summary.steps},
                         {"replicas", summary.replicas},
                         {"workers", summary.workers},
                         {"variables_fingerprint", fingerprint},
                         {"collective_transport", summary.collective_transport},
                         {"wall_seconds", summary.wall_seconds},
                         {"batch_size", options.batch_size},
                         {"optimizer", options.optimizer.empty() ? "default" : options.optimizer},
                         {"resumed_from_step", summary.resumed_from_step},
                         {"checkpoints_saved", summary.checkpoints_saved},
                         {"max_save_stall_seconds", summary.max_save_stall_seconds}};
  if (options.model == train::ModelKind::kCharTransformer) {
    json.erase("test_accuracy");
    json["validation_loss"] = summary.validation_loss;
    json["train_tokens_per_sec"] = summary.train_tokens_per_sec;
  }
  if (summary.ps_tasks > 0) {
    json["ps_tasks"] = summary.ps_tasks;
    json["rescheduled_steps"] = summary.rescheduled_steps;
    json["worker_recoveries"] = summary.worker_recoveries;
    json["ps_recoveries"] = summary.ps_recoveries;
    json["steps_lost"] = summary.steps_lost;
    if (options.per_worker_dataset) {
      json["per_worker_datasets_rebuilt"] = summary.per_worker_datasets_rebuilt;
    }
    if (summary.exactly_once) {
      json["input_shards_reissued"] = summary.input_shards_reissued;
      json["lost_commits"] = summary.lost_commits;
    }
  }
  if (summary.elastic) {
    json["worker_index"] = summary.worker_index;
    json["generations"] = summary.generations;
    json["membership_changes"] = summary.membership_changes;
    json["steps_recomputed"] = summary.steps_recomputed;
    json["elastic_recovery_seconds"] = summary.elastic_recovery_seconds;
    json["elastic_heal_seconds"] = summary.elastic_heal_seconds;
    json["finished_before_joining"] = summary.finished_before_joining;
  }
  if (!summary.trace_file.empty()) {
    json["trace_file"] = summary.trace_file;
    json["traced_steps"] = TracedStepsJson(summary.traced_steps);
  }
  if (!summary.worker_step_phases.empty()) {
    json["step_phases_ms"] = StepPhasesJson(summary.worker_step_phases);
    json["stragglers"] = StragglersJson(summary.stragglers);
  }
  return json;
}

}  // namespace weft::cli
