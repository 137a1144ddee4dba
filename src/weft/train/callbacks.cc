#include "weft/train/callbacks.h"

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "weft/core/str_util.h"
#include "weft/distribute/strategy.h"

namespace weft::train {
namespace {

std::string FormatLogs(const Logs& logs) {
  std::string text;
  char buffer[64];
  for (const auto& [name, value] : logs) {
    std::snprintf(buffer, sizeof(buffer), "  %s %.4f", name.c_str(), value);
    text += buffer;
  }
  return text;
}

// A JSON string or number; names that are not UTF-8 are repaired rather than thrown at, and NaN
// and infinity, which JSON lacks, become null.
std::string Json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One JSON object of `logs`, after `first` if any, on one line ({"epoch": 1, "loss": 0.25}).
std::string JsonLine(const Logs& logs, const std::pair<std::string, int>* first = nullptr) {
  std::vector<std::string> fields;
  if (first != nullptr) fields.push_back(StrCat(Json(first->first), ": ", first->second));
  for (const auto& [name, value] : logs) fields.push_back(StrCat(Json(name), ": ", Json(value)));
  return StrCat("{", StrJoin(fields, ", "), "}\n");
}

// A double kept in an int64 state value, by its bits.
int64_t Bits(double value) { return std::bit_cast<int64_t>(value); }
double FromBits(int64_t bits) { return std::bit_cast<double>(bits); }

// Whether higher values of `monitor` are better under `mode` ("auto": when the name holds "acc",
// as the reference decides).
StatusOr<bool> HigherIsBetter(std::string_view who, const std::string& monitor,
                              const std::string& mode) {
  if (mode == "min") return false;
  if (mode == "max") return true;
  if (mode == "auto") return monitor.find("acc") != std::string::npos;
  return InvalidArgument(who, ": mode must be min, max or auto, got '", mode, "'");
}

// logs[monitor], or InvalidArgument naming it and the logs there are.
StatusOr<double> Monitored(std::string_view who, const std::string& monitor, const Logs& logs) {
  auto found = logs.find(monitor);
  if (found != logs.end()) return found->second;
  std::vector<std::string> names;
  for (const auto& [name, value] : logs) names.push_back(name);
  return InvalidArgument(who, ": the logs have no '", monitor, "' (they have ",
                         StrJoin(names, ", "), ")");
}

bool Improves(double value, double best, bool has_best, bool higher_is_better, double min_delta) {
  return !has_best || (higher_is_better ? value > best + min_delta : value < best - min_delta);
}

// Reads `name` of `state` into *value; false (and *value untouched) when it is not there.
template <typename T>
bool Take(const CallbackState& state, const std::string& name, T* value) {
  auto found = state.find(name);
  if (found == state.end()) return false;
  if constexpr (std::is_same_v<T, double>) {
    *value = FromBits(found->second);
  } else {
    *value = static_cast<T>(found->second);
  }
  return true;
}

}  // namespace

ProgressBar::ProgressBar(FILE* out) : out_(out), terminal_(isatty(fileno(out)) == 1) {}

Status ProgressBar::OnEpochBegin(Model&, int epoch) {
  epoch_ = epoch;
  seconds_ = 0;
  examples_ = 0;
  return Status::OK();
}

Status ProgressBar::OnTrainBatchEnd(Model&, const Logs& logs) {
  seconds_ += logs.at("seconds");
  examples_ += static_cast<int64_t>(logs.at("examples"));
  epochs_ = static_cast<int>(logs.at("epochs"));
  if (!terminal_) return Status::OK();
  const auto batch = static_cast<int64_t>(logs.at("batch"));
  const auto steps = static_cast<int64_t>(logs.at("steps"));
  std::string progress = StrCat(batch);
  if (steps > 0) {
    // "120/469 [======>        ]": the bar is 20 characters wide.
    constexpr int kWidth = 20;
    const int done = static_cast<int>(kWidth * std::min(batch, steps) / steps);
    progress = StrCat(batch, "/", steps, " [", std::string(done, '='), done < kWidth ? ">" : "",
                      std::string(std::max(0, kWidth - done - 1), ' '), "]");
  }
  std::fprintf(out_, "\rEpoch %d/%d  %s  loss %.4f  %.0f examples/s   ", epoch_ + 1, epochs_,
               progress.c_str(), logs.at("loss"), examples_ / std::max(seconds_, 1e-9));
  std::fflush(out_);
  return Status::OK();
}

Status ProgressBar::OnEpochEnd(Model&, int epoch, const Logs& logs) {
  std::fprintf(out_, "%sEpoch %d: %.1f s, %.0f examples/s%s\n", terminal_ ? "\r" : "", epoch + 1,
               seconds_, examples_ / std::max(seconds_, 1e-9), FormatLogs(logs).c_str());
  std::fflush(out_);
  return Status::OK();
}

JsonLinesLogger::JsonLinesLogger(std::string path, bool every_batch)
    : path_(std::move(path)), every_batch_(every_batch) {}

JsonLinesLogger::~JsonLinesLogger() {
  if (file_ != nullptr) std::fclose(file_);
}

Status JsonLinesLogger::OnTrainBegin(Model&) {
  if (file_ != nullptr) return Status::OK();
  file_ = std::fopen(path_.c_str(), "a");
  if (file_ == nullptr) {
    return InvalidArgument("JsonLinesLogger: cannot open '", path_, "': ", std::strerror(errno));
  }
  return Status::OK();
}

Status JsonLinesLogger::Write(const std::string& line) {
  if (file_ == nullptr) return FailedPrecondition("JsonLinesLogger: '", path_, "' is not open");
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    return Internal("JsonLinesLogger: cannot write '", path_, "': ", std::strerror(errno));
  }
  return Status::OK();
}

Status JsonLinesLogger::OnTrainBatchEnd(Model&, const Logs& logs) {
  if (!every_batch_) return Status::OK();
  return Write(JsonLine(logs));
}

Status JsonLinesLogger::OnEpochEnd(Model&, int epoch, const Logs& logs) {
  const std::pair<std::string, int> number = {"epoch", epoch + 1};
  return Write(JsonLine(logs, &number));
}

Status JsonLinesLogger::OnTrainEnd(Model&) {
  if (file_ != nullptr && std::fclose(file_) != 0) {
    file_ = nullptr;
    return Internal("JsonLinesLogger: cannot close '", path_, "': ", std::strerror(errno));
  }
  file_ = nullptr;
  return Status::OK();
}

Status LearningRateScheduler::OnEpochBegin(Model& model, int epoch) {
  const double current = model.learning_rate();
  const double next = schedule_(epoch, current);
  if (!(next >= 0) || !std::isfinite(next)) {
    return InvalidArgument("LearningRateScheduler: the schedule gave ", next, " for epoch ", epoch,
                           " (a learning rate must be finite and non-negative)");
  }
  if (next == current) return Status::OK();
  return model.SetLearningRate(next);
}

EarlyStopping::EarlyStopping(std::string monitor, int patience, double min_delta)
    : monitor_(std::move(monitor)),
      patience_(patience),
      min_delta_(std::abs(min_delta)),
      higher_is_better_(monitor_.find("acc") != std::string::npos) {}

Status EarlyStopping::OnTrainBegin(Model&) {
  has_best_ = false;
  waited_ = 0;
  stopped_epoch_ = -1;
  return Status::OK();
}

Status EarlyStopping::OnEpochEnd(Model& model, int epoch, const Logs& logs) {
  WEFT_ASSIGN_OR_RETURN(const double value, Monitored("EarlyStopping", monitor_, logs));
  if (Improves(value, best_, has_best_, higher_is_better_, min_delta_)) {
    best_ = value;
    has_best_ = true;
    waited_ = 0;
    return Status::OK();
  }
  if (++waited_ > patience_) {
    stopped_epoch_ = epoch;
    model.StopTraining();
  }
  return Status::OK();
}

CallbackState EarlyStopping::State() const {
  const std::string prefix = "early_stopping/" + monitor_;
  return {{prefix + "/best", Bits(best_)},
          {prefix + "/has_best", has_best_ ? 1 : 0},
          {prefix + "/wait", waited_}};
}

Status EarlyStopping::RestoreState(const CallbackState& state) {
  const std::string prefix = "early_stopping/" + monitor_;
  double best = 0;
  int64_t has_best = 0, waited = 0;
  // All or nothing: a checkpoint without them (a run without this callback) leaves it afresh.
  if (Take(state, prefix + "/best", &best) && Take(state, prefix + "/has_best", &has_best) &&
      Take(state, prefix + "/wait", &waited)) {
    best_ = best;
    has_best_ = has_best != 0;
    waited_ = static_cast<int>(waited);
  }
  return Status::OK();
}

ModelCheckpoint::ModelCheckpoint(std::string directory, ModelCheckpointOptions options)
    : directory_(std::move(directory)), options_(std::move(options)) {}

Status ModelCheckpoint::OnTrainBegin(Model& model) {
  if (checkpoints_ != nullptr) {
    if (model_ != &model) {
      return FailedPrecondition("ModelCheckpoint '", directory_, "' serves model '", model_->name(),
                                "'; model '", model.name(), "' needs a ModelCheckpoint of its own");
    }
    return Status::OK();
  }
  const std::string who = StrCat("ModelCheckpoint '", directory_, "'");
  if (options_.save_best_only) {
    if (options_.save_every_steps != 0) {
      return InvalidArgument(who, ": save_best_only saves at the end of epochs, so ",
                             "save_every_steps must be 0, got ", options_.save_every_steps);
    }
    WEFT_ASSIGN_OR_RETURN(higher_is_better_, HigherIsBetter(who, options_.monitor, options_.mode));
  }
  // Every callback's state is saved beside the position, under names fixed from now on.
  WEFT_ASSIGN_OR_RETURN(CallbackState state, model.CallbackStates());
  std::vector<std::string> state_names;
  for (const auto& [name, value] : state) state_names.push_back(name);
  const distribute::Strategy& strategy = *model.strategy();
  TrainCheckpointOptions options{.directory = directory_,
                                 .save_every_steps = options_.save_every_steps,
                                 .keep = options_.keep,
                                 .async = options_.async,
                                 .writer = strategy.extended().ShouldCheckpoint(),
                                 .report = options_.report,
                                 .state_names = std::move(state_names)};
  WEFT_RETURN_IF_ERROR(model.AddToGraph([&](const Scope& root) -> Status {
    checkpoint::CheckpointObjects objects;
    objects.distributed_variables = model.distributed_variables();
    objects.replicas = strategy.num_replicas_in_sync();
    WEFT_ASSIGN_OR_RETURN(
        checkpoints_, TrainCheckpoints::Create(root.NewSubScope("checkpoint"), objects, options));
    return Status::OK();
  }));
  model_ = &model;
  // A ps task that restarts mid-Fit may be restored from these checkpoints (each ps writes its
  // own), when they are newer than the model's in-memory snapshot.
  model.SetRecoveryCheckpoints(checkpoints_.get());
  // Only a model that has not trained yet continues a stopped run; a later Fit of this model
  // goes on from where it is.
  if (options_.resume && model.position().global_step == 0) {
    WEFT_ASSIGN_OR_RETURN(std::optional<RestoredTraining> restored,
                          checkpoints_->RestoreLatest(*model.session()));
    if (restored.has_value()) {
      resumed_from_step_ = restored->position.global_step;
      model.ResumeAt(restored->position, std::move(restored->state));
    }
  }
  return checkpoints_->Prepare(*model.session());
}

Status ModelCheckpoint::Save(Model& model, bool final) {
  WEFT_ASSIGN_OR_RETURN(CallbackState state, model.CallbackStates());
  return checkpoints_->Save(*model.session(), model.position(), final, state);
}

Status ModelCheckpoint::SaveNow(Model& model) {
  if (checkpoints_ == nullptr) {
    return FailedPrecondition("ModelCheckpoint::SaveNow: no Fit began with this callback");
  }
  WEFT_ASSIGN_OR_RETURN(CallbackState state, model.CallbackStates());
  return checkpoints_->SaveNow(*model.session(), model.position(), state);
}

Status ModelCheckpoint::OnTrainBatchEnd(Model& model, const Logs& logs) {
  checkpoints_->RecordStep(logs.at("seconds"));
  if (options_.save_every_steps == 0 || options_.save_best_only) return Status::OK();
  const TrainPosition& position = model.position();
  if (position.global_step % options_.save_every_steps != 0) return Status::OK();
  // The epoch's last step (the position is the next epoch's start): saved after its callbacks.
  if (position.batch_index == 0) {
    save_after_epoch_ = true;
    return Status::OK();
  }
  return Save(model, /*final=*/false);
}

Status ModelCheckpoint::AfterEpochEnd(Model& model, int /*epoch*/, const Logs& logs) {
  if (options_.save_best_only) {
    WEFT_ASSIGN_OR_RETURN(const double value, Monitored("ModelCheckpoint", options_.monitor, logs));
    if (!Improves(value, best_, has_best_, higher_is_better_, /*min_delta=*/0)) {
      return Status::OK();
    }
    best_ = value;
    has_best_ = true;
    return Save(model, /*final=*/false);
  }
  if (options_.save_every_steps != 0 && !save_after_epoch_) return Status::OK();
  save_after_epoch_ = false;
  return Save(model, /*final=*/false);
}

Status ModelCheckpoint::OnTrainEnd(Model& model) {
  if (!options_.save_best_only) WEFT_RETURN_IF_ERROR(Save(model, /*final=*/true));
  return checkpoints_->Finish();
}

CallbackState ModelCheckpoint::State() const {
  if (!options_.save_best_only) return {};
  const std::string prefix = "model_checkpoint/" + options_.monitor;
  return {{prefix + "/best", Bits(best_)}, {prefix + "/has_best", has_best_ ? 1 : 0}};
}

Status ModelCheckpoint::RestoreState(const CallbackState& state) {
  const std::string prefix = "model_checkpoint/" + options_.monitor;
  double best = 0;
  int64_t has_best = 0;
  if (options_.save_best_only && Take(state, prefix + "/best", &best) &&
      Take(state, prefix + "/has_best", &has_best)) {
    best_ = best;
    has_best_ = has_best != 0;
  }
  return Status::OK();
}

}  // namespace weft::train
