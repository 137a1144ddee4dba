#include "weft/train/fit_loop.h"

#include "weft/core/str_util.h"
#include "weft/runtime/trace/step_stats_collector.h"
#include "weft/train/callbacks.h"
#include "weft/train/model_graph.h"

namespace weft::train {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

StatusOr<History> FitLoop::Run() {
  History history;
  for (int epoch = static_cast<int>(model_.position_.epoch);
       epoch < options_.epochs && !model_.stop_training_ && !Capped(); ++epoch) {
    WEFT_RETURN_IF_ERROR(StartEpoch(epoch));
    const bool coordinated = model_.coordinator_ != nullptr;
    if (coordinated) WEFT_RETURN_IF_ERROR(model_.PrepareSnapshots());
    while (!end_ && !Capped() && !model_.stop_training_) {
      WEFT_RETURN_IF_ERROR(coordinated ? ScheduleStep(epoch) : RunStep(epoch));
    }
    while (!in_flight_.empty()) WEFT_RETURN_IF_ERROR(FinishOldestStep(epoch));
    WEFT_ASSIGN_OR_RETURN(Logs logs, EndEpoch(epoch));
    history.epochs.push_back(std::move(logs));
  }
  return history;
}

Status FitLoop::StartEpoch(int epoch) {
  WEFT_ASSIGN_OR_RETURN(iterator_, dataset_.MakeIterator(static_cast<uint64_t>(epoch)));
  for (Callback* callback : options_.callbacks) {
    WEFT_RETURN_IF_ERROR(callback->OnEpochBegin(model_, epoch));
  }
  // A resumed epoch keeps the metrics' totals the checkpoint restored.
  if (skip_ == 0) {
    WEFT_RETURN_IF_ERROR(model_.session_->Run({}, {}, {model_.graph_->reset_metrics}, &outputs_));
  }
  next_.clear();
  end_ = false;
  in_epoch_ = 0;
  finished_in_epoch_ = skip_;
  for (; in_epoch_ < skip_ && !end_; ++in_epoch_) {
    WEFT_RETURN_IF_ERROR(iterator_->GetNext(&next_, &end_));
  }
  if (end_) {
    return FailedPrecondition("Fit: resuming at batch ", skip_, " of epoch ", epoch + 1,
                              ", but this dataset's epoch has only ", in_epoch_ - 1, " batches");
  }
  skip_ = 0;
  WEFT_RETURN_IF_ERROR(iterator_->GetNext(&next_, &end_));
  if (end_ && in_epoch_ == 0) {
    return InvalidArgument("Fit: epoch ", epoch + 1, " of the dataset is empty");
  }
  return Status::OK();
}

Status FitLoop::RunStep(int epoch) {
  TrainPosition& position = model_.position_;
  data::Element batch = std::move(next_);
  WEFT_RETURN_IF_ERROR(model_.CheckElement(batch, /*with_labels=*/true, "Fit"));
  bool traced = false;
  for (Callback* callback : options_.callbacks) {
    traced = traced || callback->TraceTrainBatch(position.global_step + 1);
  }
  proto::RunMetadata* metadata = traced ? traced_metadata_.Fresh() : nullptr;
  const int64_t start_nanos = StepStatsNowNanos();
  const auto start = Clock::now();
  WEFT_RETURN_IF_ERROR(model_.RunBatch(batch, model_.graph_->training, /*allow_uneven=*/false,
                                       &outputs_, traced ? &trace_options_ : nullptr, metadata));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int64_t end_nanos = StepStatsNowNanos();
  double loss = 0;
  for (const Tensor& replica_loss : outputs_) loss += *replica_loss.data<float>();
  ++in_epoch_;
  ++position.global_step;
  const bool last = options_.steps_per_epoch > 0 && in_epoch_ >= options_.steps_per_epoch;
  if (!last) WEFT_RETURN_IF_ERROR(iterator_->GetNext(&next_, &end_));
  position.epoch = last || end_ ? epoch + 1 : epoch;
  position.batch_index = last || end_ ? 0 : in_epoch_;
  if (last) end_ = true;
  Logs logs = StepLogs(in_epoch_, batch[0].dim_size(0), seconds,
                       loss / static_cast<double>(outputs_.size()));
  for (Callback* callback : options_.callbacks) {
    if (traced) {
      WEFT_RETURN_IF_ERROR(
          callback->OnTrainBatchTraced(model_, metadata->step_stats(), start_nanos, end_nanos));
    }
    WEFT_RETURN_IF_ERROR(callback->OnTrainBatchEnd(model_, logs));
  }
  return Status::OK();
}

Logs FitLoop::StepLogs(int64_t batch, int64_t examples, double seconds, double loss) const {
  return {{"loss", loss},
          {"examples", static_cast<double>(examples)},
          {"seconds", seconds},
          {"batch", static_cast<double>(batch)},
          {"step", static_cast<double>(model_.position_.global_step)},
          {"steps", static_cast<double>(options_.steps_per_epoch)},
          {"epochs", static_cast<double>(options_.epochs)}};
}

Status FitLoop::ScheduleStep(int epoch) {
  data::Element batch = std::move(next_);
  WEFT_RETURN_IF_ERROR(model_.CheckElement(batch, /*with_labels=*/true, "Fit"));
  WEFT_ASSIGN_OR_RETURN(Model::BatchStep step,
                        model_.PrepareBatch(batch, model_.graph_->training, false));
  const Model& model = model_;
  auto run = [&model, step = std::move(step)](int worker) -> distribute::FunctionResult {
    std::vector<Tensor> outputs;
    WEFT_RETURN_IF_ERROR(
        model.WorkerSession(worker)->Run(step.feeds, step.fetches, step.targets, &outputs));
    return outputs;
  };
  in_flight_.push_back(
      {model_.coordinator_->Schedule(std::move(run)), batch[0].dim_size(0), Clock::now()});
  ++in_epoch_;
  const bool last = options_.steps_per_epoch > 0 && in_epoch_ >= options_.steps_per_epoch;
  if (!last) WEFT_RETURN_IF_ERROR(iterator_->GetNext(&next_, &end_));
  if (last) end_ = true;
  // Two steps per worker: each worker finds its next step queued when it finishes one.
  const size_t window = 2 * static_cast<size_t>(model_.coordinator_->num_workers());
  while (in_flight_.size() >= window) WEFT_RETURN_IF_ERROR(FinishOldestStep(epoch));
  return Status::OK();
}

Status FitLoop::FinishOldestStep(int epoch) {
  InFlightStep step = std::move(in_flight_.front());
  in_flight_.pop_front();
  distribute::FunctionResult result = step.value.Fetch();
  if (!result.ok()) {
    // The coordinator cancelled the queued steps; Join reports the error once and clears it.
    in_flight_.clear();
    model_.coordinator_->Join().IgnoreError();
    return result.status().WithContext(StrCat("a training step on worker ", step.value.worker()));
  }
  // The time since the previous step finished (or this one was scheduled): steps overlap, so the
  // sum of these over an epoch is its wall time, and examples over it the throughput.
  const Clock::time_point now = Clock::now();
  const Clock::time_point since = last_finished_ > step.scheduled ? last_finished_ : step.scheduled;
  const double seconds = std::chrono::duration<double>(now - since).count();
  last_finished_ = now;
  TrainPosition& position = model_.position_;
  ++position.global_step;
  ++finished_in_epoch_;
  WEFT_RETURN_IF_ERROR(model_.MaybeSnapshot(position.global_step));
  const bool epoch_done = end_ && in_flight_.empty();
  position.epoch = epoch_done ? epoch + 1 : epoch;
  position.batch_index = epoch_done ? 0 : finished_in_epoch_;
  Logs logs = StepLogs(finished_in_epoch_, step.examples, seconds, *(*result)[0].data<float>());
  for (Callback* callback : options_.callbacks) {
    WEFT_RETURN_IF_ERROR(callback->OnTrainBatchEnd(model_, logs));
  }
  return Status::OK();
}

StatusOr<Logs> FitLoop::EndEpoch(int epoch) {
  if (!model_.graph_->sync_on_read_means.empty()) {
    WEFT_RETURN_IF_ERROR(
        model_.session_->Run({}, {}, {model_.graph_->sync_on_read_means}, &outputs_));
  }
  WEFT_ASSIGN_OR_RETURN(Logs logs, model_.ReadMetrics(""));
  if (options_.validation_data.has_value()) {
    WEFT_ASSIGN_OR_RETURN(Logs validation, model_.Evaluate(*options_.validation_data));
    for (const auto& [name, value] : validation) logs["val_" + name] = value;
  }
  for (Callback* callback : options_.callbacks) {
    WEFT_RETURN_IF_ERROR(callback->OnEpochEnd(model_, epoch, logs));
  }
  return logs;
}

}  // namespace weft::train
