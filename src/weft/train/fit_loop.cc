#include "weft/train/fit_loop.h"

#include <algorithm>

#include "weft/core/str_util.h"
#include "weft/runtime/trace/step_stats_collector.h"
#include "weft/train/callbacks.h"
#include "weft/train/model_graph.h"

namespace weft::train {
namespace {

using Clock = std::chrono::steady_clock;

// "at epoch 2, step 7 (batch 3)" or, for several steps, "at epoch 2, steps 7-10 (batches 3-6)":
// where in training a failed step was (epoch and batch count from 1, as the logs do).
std::string Where(int epoch, int64_t first_step, int64_t first_batch, size_t steps) {
  if (steps <= 1) {
    return StrCat("Fit at epoch ", epoch + 1, ", step ", first_step, " (batch ", first_batch, ")");
  }
  const auto last = static_cast<int64_t>(steps) - 1;
  return StrCat("Fit at epoch ", epoch + 1, ", steps ", first_step, "-", first_step + last,
                " (batches ", first_batch, "-", first_batch + last, ")");
}

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
    WEFT_RETURN_IF_ERROR(CheckEveryShardConsumed(epoch));
    WEFT_ASSIGN_OR_RETURN(Logs logs, EndEpoch(epoch));
    history.epochs.push_back(std::move(logs));
    history.epoch.push_back(epoch);
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
  leases_ =
      model_.exactly_once_ != nullptr ? std::make_shared<distribute::InputShardLeases>(0) : nullptr;
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

Status FitLoop::TakeExecution(int epoch, std::vector<data::Element>* batches) {
  const TrainPosition& position = model_.position_;
  int64_t room = model_.options_.steps_per_execution;
  if (options_.steps_per_epoch > 0) room = std::min(room, options_.steps_per_epoch - in_epoch_);
  if (options_.max_steps >= 0) {
    room = std::min(room, options_.max_steps - position.global_step - in_flight_steps_);
  }
  room = std::max<int64_t>(room, 1);
  batches->clear();
  batches->push_back(std::move(next_));
  ++in_epoch_;
  while (static_cast<int64_t>(batches->size()) < room) {
    data::Element batch;
    WEFT_RETURN_IF_ERROR(iterator_->GetNext(&batch, &end_));
    if (end_) break;
    batches->push_back(std::move(batch));
    ++in_epoch_;
  }
  const int64_t first = in_epoch_ - static_cast<int64_t>(batches->size()) + 1;
  for (size_t k = 0; k < batches->size(); ++k) {
    WEFT_RETURN_IF_ERROR(
        model_.CheckElement((*batches)[k], /*with_labels=*/true, "Fit")
            .WithContext(StrCat("epoch ", epoch + 1, ", batch ", first + static_cast<int64_t>(k))));
  }
  const bool last = options_.steps_per_epoch > 0 && in_epoch_ >= options_.steps_per_epoch;
  if (!last && !end_) WEFT_RETURN_IF_ERROR(iterator_->GetNext(&next_, &end_));
  if (last) end_ = true;
  return Status::OK();
}

bool FitLoop::Unrolled(size_t batches) const {
  return model_.options_.steps_per_execution > 1 &&
         static_cast<int64_t>(batches) == model_.options_.steps_per_execution;
}

Status FitLoop::RunStep(int epoch) {
  TrainPosition& position = model_.position_;
  const int64_t first_in_epoch = in_epoch_;
  std::vector<data::Element> batches;
  const auto input_start = Clock::now();
  WEFT_RETURN_IF_ERROR(TakeExecution(epoch, &batches));
  input_seconds_ =
      std::chrono::duration<double>(Clock::now() - input_start).count() / batches.size();
  bool traced = false;
  for (size_t i = 0; i < batches.size(); ++i) {
    for (Callback* callback : options_.callbacks) {
      traced = traced || callback->TraceTrainBatch(position.global_step + 1 + i);
    }
  }
  if (Unrolled(batches.size()) && !traced) {
    const std::string where =
        Where(epoch, position.global_step + 1, first_in_epoch + 1, batches.size());
    StatusOr<Model::BatchStep> step = model_.PrepareExecution(batches);
    if (!step.ok()) return step.status().WithContext(where);
    const auto start = Clock::now();
    WEFT_RETURN_IF_ERROR(model_.session_->Run(step->feeds, step->fetches, step->targets, &outputs_)
                             .WithContext(where));
    const double seconds =
        std::chrono::duration<double>(Clock::now() - start).count() / batches.size();
    for (size_t k = 0; k < batches.size(); ++k) {
      WEFT_RETURN_IF_ERROR(FinishStep(epoch, batches[k][0].dim_size(0), seconds,
                                      MeanLoss(outputs_, batches.size(), k),
                                      k + 1 == batches.size(), nullptr, 0, 0));
    }
    return Status::OK();
  }
  for (size_t i = 0; i < batches.size(); ++i) {
    bool trace = false;
    for (Callback* callback : options_.callbacks) {
      trace = trace || callback->TraceTrainBatch(position.global_step + 1);
    }
    proto::RunMetadata* metadata = trace ? traced_metadata_.Fresh() : nullptr;
    const int64_t start_nanos = StepStatsNowNanos();
    const auto start = Clock::now();
    WEFT_RETURN_IF_ERROR(model_
                             .RunBatch(batches[i], model_.graph_->training,
                                       /*allow_uneven=*/false, &outputs_,
                                       trace ? &trace_options_ : nullptr, metadata)
                             .WithContext(Where(epoch, position.global_step + 1,
                                                first_in_epoch + static_cast<int64_t>(i) + 1, 1)));
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    WEFT_RETURN_IF_ERROR(FinishStep(epoch, batches[i][0].dim_size(0), seconds,
                                    MeanLoss(outputs_, 1, 0), i + 1 == batches.size(), metadata,
                                    start_nanos, StepStatsNowNanos()));
  }
  return Status::OK();
}

double FitLoop::MeanLoss(const std::vector<Tensor>& losses, size_t steps, size_t step) {
  // Each replica's losses, step-major.
  const size_t replicas = losses.size() / steps;
  double sum = 0;
  for (size_t r = 0; r < replicas; ++r) sum += *losses[r * steps + step].data<float>();
  return sum / static_cast<double>(replicas);
}

Status FitLoop::FinishStep(int epoch, int64_t examples, double seconds, double loss,
                           bool last_of_execution, const proto::RunMetadata* metadata,
                           int64_t start_nanos, int64_t end_nanos) {
  TrainPosition& position = model_.position_;
  ++position.global_step;
  ++finished_in_epoch_;
  // The epoch is over after the last step of the last execution (end_ says none follows).
  const bool epoch_done = last_of_execution && end_ && in_flight_.empty();
  position.epoch = epoch_done ? epoch + 1 : epoch;
  position.batch_index = epoch_done ? 0 : finished_in_epoch_;
  Logs logs = StepLogs(finished_in_epoch_, examples, seconds, loss);
  for (Callback* callback : options_.callbacks) {
    if (metadata != nullptr) {
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
          {"input_seconds", input_seconds_},
          {"batch", static_cast<double>(batch)},
          {"step", static_cast<double>(model_.position_.global_step)},
          {"steps", static_cast<double>(options_.steps_per_epoch)},
          {"epochs", static_cast<double>(options_.epochs)}};
}

Status FitLoop::ScheduleStep(int epoch) {
  std::vector<data::Element> batches;
  WEFT_RETURN_IF_ERROR(TakeExecution(epoch, &batches));
  // The first step and batch (in the epoch) of the next function, counted from 1.
  int64_t first_step = model_.position_.global_step + in_flight_steps_ + 1;
  int64_t first_batch = in_epoch_ - static_cast<int64_t>(batches.size()) + 1;
  // One function for a whole execution; batches short of one are scheduled one by one.
  std::vector<std::vector<data::Element>> functions;
  if (Unrolled(batches.size())) {
    functions.push_back(std::move(batches));
  } else {
    for (data::Element& batch : batches) functions.push_back({std::move(batch)});
  }
  const Model& model = model_;
  for (std::vector<data::Element>& function : functions) {
    std::string where = Where(epoch, first_step, first_batch, function.size());
    // Under per-worker datasets the step reads its batch on the worker: nothing is fed.
    StatusOr<Model::BatchStep> prepared =
        model_.per_worker_step_.has_value() ? StatusOr<Model::BatchStep>(*model_.per_worker_step_)
        : function.size() > 1               ? model_.PrepareExecution(function)
                              : model_.PrepareBatch(function[0], model_.graph_->training, false);
    if (!prepared.ok()) return prepared.status().WithContext(where);
    Model::BatchStep step = std::move(prepared).value();
    // Under exactly-once input the function's batches are one input shard, leased to the worker
    // that runs it.
    std::shared_ptr<distribute::InputShardLeases> leases = leases_;
    const int64_t shard = leases != nullptr ? leases->AddShard() : -1;
    auto run = [&model, step = std::move(step), leases,
                shard](int worker) -> distribute::FunctionResult {
      if (leases != nullptr) return RunLeased(model, step, *leases, shard, worker);
      std::vector<Tensor> outputs;
      WEFT_RETURN_IF_ERROR(
          model.WorkerSession(worker)->Run(step.feeds, step.fetches, step.targets, &outputs));
      return outputs;
    };
    std::vector<int64_t> examples;
    for (const data::Element& batch : function) examples.push_back(batch[0].dim_size(0));
    in_flight_steps_ += static_cast<int64_t>(function.size());
    first_step += static_cast<int64_t>(function.size());
    first_batch += static_cast<int64_t>(function.size());
    in_flight_.push_back({model_.coordinator_->Schedule(std::move(run)), std::move(examples),
                          Clock::now(), std::move(where)});
  }
  // Two functions per worker: each worker finds its next one queued when it finishes one.
  const size_t window = 2 * static_cast<size_t>(model_.coordinator_->num_workers());
  while (in_flight_.size() >= window) WEFT_RETURN_IF_ERROR(FinishOldestStep(epoch));
  return Status::OK();
}

Status FitLoop::FinishOldestStep(int epoch) {
  InFlightStep step = std::move(in_flight_.front());
  in_flight_.pop_front();
  const size_t steps = step.examples.size();
  in_flight_steps_ -= static_cast<int64_t>(steps);
  distribute::FunctionResult result = step.value.Fetch();
  if (!result.ok()) {
    // The coordinator cancelled the queued steps; Join reports the error once and clears it.
    in_flight_.clear();
    in_flight_steps_ = 0;
    model_.coordinator_->Join().IgnoreError();
    return result.status().WithContext(StrCat(step.where, ", on worker ", step.value.worker()));
  }
  // The time since the previous step finished (or this one was scheduled): steps overlap, so the
  // sum of these over an epoch is its wall time, and examples over it the throughput.
  const Clock::time_point now = Clock::now();
  const Clock::time_point since = last_finished_ > step.scheduled ? last_finished_ : step.scheduled;
  const double seconds = std::chrono::duration<double>(now - since).count() / steps;
  last_finished_ = now;
  for (size_t k = 0; k < steps; ++k) {
    WEFT_RETURN_IF_ERROR(FinishStep(epoch, step.examples[k], seconds, MeanLoss(*result, steps, k),
                                    k + 1 == steps, nullptr, 0, 0));
    WEFT_RETURN_IF_ERROR(model_.MaybeSnapshot(model_.position_.global_step));
  }
  return Status::OK();
}

distribute::FunctionResult FitLoop::RunLeased(const Model& model, const Model::BatchStep& step,
                                              distribute::InputShardLeases& leases, int64_t shard,
                                              int worker) {
  WEFT_ASSIGN_OR_RETURN(const distribute::InputShardLease lease,
                        leases.AcquireShard(shard, worker));
  StatusOr<std::vector<Tensor>> outputs =
      model.exactly_once_->Run(*model.WorkerSession(worker), *model.worker_sessions_, step.feeds,
                               step.fetches, step.targets);
  if (!outputs.ok()) {
    // Nothing of it was applied: the shard goes back, and the coordinator reruns the step when
    // the worker was lost (or Fit fails with its error).
    leases.Abandon(lease);
    return outputs.status();
  }
  WEFT_RETURN_IF_ERROR(leases.Complete(lease));
  return outputs;
}

Status FitLoop::CheckEveryShardConsumed(int epoch) {
  if (leases_ == nullptr) return Status::OK();
  model_.input_shards_reissued_.fetch_add(leases_->reissued());
  if (!leases_->AllConsumed()) {
    return Internal("exactly-once input: epoch ", epoch + 1, " ended with ",
                    leases_->num_shards() - leases_->consumed(), " of its ", leases_->num_shards(),
                    " scheduled steps not committed");
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
  for (Callback* callback : options_.callbacks) {
    WEFT_RETURN_IF_ERROR(callback->AfterEpochEnd(model_, epoch, logs));
  }
  return logs;
}

}  // namespace weft::train
