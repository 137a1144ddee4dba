// Model's Fit, Evaluate and Predict loops and its Summary (the graph is built in model.cc, by
// model_graph_builder.cc's steps).
#include <chrono>
#include <cstring>
#include <vector>

#include <google/protobuf/arena.h>

#include "weft/core/str_util.h"
#include "weft/runtime/trace/step_stats_collector.h"
#include "weft/train/callbacks.h"
#include "weft/train/model_graph.h"

namespace weft::train {
namespace {

using Clock = std::chrono::steady_clock;

// Gives each traced step a fresh RunMetadata on an arena whose first block stays from step to
// step: the step stats' few hundred protos and strings then cost no malloc or free each (they
// were a third of what tracing every step of W1 cost).
class TracedStepMetadata {
 public:
  TracedStepMetadata() : block_(kFirstBlockBytes), arena_(FirstBlock(block_)) {}

  // Valid until the next call.
  proto::RunMetadata* Fresh() {
    arena_.Reset();
    return google::protobuf::Arena::CreateMessage<proto::RunMetadata>(&arena_);
  }

 private:
  static constexpr size_t kFirstBlockBytes = 256 << 10;

  static google::protobuf::ArenaOptions FirstBlock(std::vector<char>& block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block.data();
    options.initial_block_size = block.size();
    return options;
  }

  std::vector<char> block_;
  google::protobuf::Arena arena_;
};

InputSpec SpecOf(const Tensor& batch) {
  std::vector<int64_t> dims;
  for (int i = 1; i < batch.dims(); ++i) dims.push_back(batch.dim_size(i));
  return {PartialShape(std::move(dims)), batch.dtype()};
}

Status CheckElement(const data::Element& element, size_t components, std::string_view what) {
  if (element.size() < components) {
    return InvalidArgument(what, " needs dataset elements of ", components,
                           components == 1 ? " component (inputs)" : " components (inputs, labels)",
                           ", got ", element.size());
  }
  for (size_t c = 0; c < components; ++c) {
    if (element[c].dims() < 1) {
      return InvalidArgument(what, " needs batched elements (Dataset::Batch), but component ", c,
                             " is a scalar");
    }
  }
  return Status::OK();
}

Status CheckFitOptions(const FitOptions& options) {
  if (options.epochs < 1) {
    return InvalidArgument("Fit: epochs must be positive, got ", options.epochs);
  }
  if (options.steps_per_epoch == 0 || options.steps_per_epoch < -1) {
    return InvalidArgument("Fit: steps_per_epoch must be positive or -1, got ",
                           options.steps_per_epoch);
  }
  if (options.max_steps < -1) {
    return InvalidArgument("Fit: max_steps must be -1 or at least 0, got ", options.max_steps);
  }
  return Status::OK();
}

// Rows of `parts` one after another (same dtype and row shape).
StatusOr<Tensor> ConcatRows(const std::vector<Tensor>& parts) {
  if (parts.empty()) return Tensor();
  int64_t rows = 0;
  for (const Tensor& part : parts) rows += part.dim_size(0);
  std::vector<int64_t> dims = {rows};
  for (int i = 1; i < parts[0].dims(); ++i) dims.push_back(parts[0].dim_size(i));
  Tensor result(parts[0].dtype(), TensorShape(dims));
  auto* out = static_cast<char*>(result.raw_data());
  for (const Tensor& part : parts) {
    if (part.dtype() != result.dtype() ||
        part.NumElements() * rows != result.NumElements() * part.dim_size(0)) {
      return Internal("Predict: the replicas' outputs differ in dtype or shape");
    }
    std::memcpy(out, part.raw_data(), part.TotalBytes());
    out += part.TotalBytes();
  }
  return result;
}

std::string ShapeText(const PartialShape& shape) {
  if (!shape.rank_known()) return "?";
  std::vector<std::string> dims;
  for (int64_t dim : shape.dims()) dims.push_back(dim < 0 ? "None" : StrCat(dim));
  return StrCat("(", StrJoin(dims, ", "), ")");
}

std::string Thousands(int64_t n) {
  std::string digits = StrCat(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

Status Model::RunBatch(const data::Element& batch, const ReplicaNames& names, bool allow_uneven,
                       std::vector<Tensor>* outputs, const proto::RunOptions* run_options,
                       proto::RunMetadata* metadata) {
  const int replicas = strategy_->num_local_replicas();
  const int workers = strategy_->num_workers();
  const bool with_labels = !names.labels.empty();
  const int64_t examples = batch[0].dim_size(0);
  // Training splits the global batch over every replica of every worker (each worker reads the
  // same batches and takes its share); inference runs the batch on this worker's replicas alone.
  const int64_t parts = allow_uneven ? replicas : int64_t{replicas} * workers;
  const bool even = examples % parts == 0;
  if (!even && !allow_uneven) {
    return InvalidArgument(
        "a training batch of ", examples, " examples does not split evenly over ", parts,
        " replicas (batch the dataset by a multiple of ", parts, ", or with drop_remainder)");
  }
  const int used = even ? replicas : 1;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches, targets;
  for (size_t c = 0; c < (with_labels ? 2u : 1u); ++c) {
    if (batch[c].dim_size(0) != examples) {
      return InvalidArgument("the batch's inputs have ", examples, " examples but its labels ",
                             batch[c].dim_size(0));
    }
    Tensor share = batch[c];
    if (!allow_uneven) {
      WEFT_ASSIGN_OR_RETURN(share, strategy_->WorkerShare(batch[c]));
    }
    std::vector<Tensor> slices = {share};
    if (used > 1) {
      WEFT_ASSIGN_OR_RETURN(slices, strategy_->SplitBatch(share));
    }
    const std::vector<std::string>& placeholders = c == 0 ? names.inputs : names.labels;
    for (int r = 0; r < used; ++r) feeds.emplace_back(placeholders[r], std::move(slices[r]));
  }
  for (int r = 0; r < used; ++r) {
    fetches.push_back(names.outputs[r]);
    if (!names.steps[r].empty()) targets.push_back(names.steps[r]);
  }
  if (run_options != nullptr) {
    return session_->Run(*run_options, feeds, fetches, targets, outputs, metadata);
  }
  return session_->Run(feeds, fetches, targets, outputs);
}

StatusOr<std::unique_ptr<data::Iterator>> Model::StartPass(const data::Dataset& dataset,
                                                           size_t components, std::string_view what,
                                                           data::Element* first) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<data::Iterator> iterator, dataset.MakeIterator());
  bool end = false;
  WEFT_RETURN_IF_ERROR(iterator->GetNext(first, &end));
  if (end) return InvalidArgument(what, ": the dataset is empty");
  WEFT_RETURN_IF_ERROR(CheckElement(*first, components, what));
  WEFT_RETURN_IF_ERROR(EnsureBuilt(SpecOf((*first)[0]), components > 1 ? &(*first)[1] : nullptr));
  return iterator;
}

StatusOr<Logs> Model::ReadMetrics(const std::string& prefix) {
  std::vector<Tensor> values;
  WEFT_RETURN_IF_ERROR(session_->Run({}, graph_->metric_results, {}, &values));
  Logs logs;
  for (size_t m = 0; m < values.size(); ++m) {
    logs[prefix + graph_->metric_names[m]] = *values[m].data<float>();
  }
  return logs;
}

Status Model::SetLearningRate(double learning_rate) {
  if (graph_ == nullptr || !graph_->has_training) {
    return FailedPrecondition("SetLearningRate: model '", name_, "' has not been trained yet");
  }
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(session_->Run(
      {{graph_->learning_rate_value, Tensor::Scalar(static_cast<float>(learning_rate))}}, {},
      {graph_->assign_learning_rate}, &outputs));
  learning_rate_ = learning_rate;
  return Status::OK();
}

// One Fit call's epochs and batches, after the graph is built and OnTrainBegin ran. Its steps
// share the epoch's iterator and the batch read ahead, and every traced step's metadata. Borrows
// the model, the dataset and the options.
class FitLoop {
 public:
  // `skip`: the batches of the first epoch that a resumed run already did.
  FitLoop(Model& model, const data::Dataset& dataset, const FitOptions& options, int64_t skip)
      : model_(model), dataset_(dataset), options_(options), skip_(skip) {
    trace_options_.set_trace_level(proto::RunOptions::FULL_TRACE);
  }

  // Each epoch's logs, from the model's position on, until the epochs, max_steps or a callback's
  // StopTraining end it.
  StatusOr<History> Run();

 private:
  // Whether the global step reached options.max_steps.
  bool Capped() const {
    return options_.max_steps >= 0 && model_.position_.global_step >= options_.max_steps;
  }
  // Begins `epoch`: its iterator, OnEpochBegin, the metrics' reset, the batches to skip and the
  // first batch read ahead.
  Status StartEpoch(int epoch);
  // Trains on the batch read ahead, reads the next one, and calls the callbacks with its logs.
  Status RunStep(int epoch);
  // The epoch's logs (the metrics, and the validation data's), given to OnEpochEnd.
  StatusOr<Logs> EndEpoch(int epoch);

  Model& model_;
  const data::Dataset& dataset_;
  const FitOptions& options_;
  int64_t skip_;
  std::unique_ptr<data::Iterator> iterator_;
  // One batch ahead, so that the step that ends the epoch knows it does (its position is then the
  // next epoch's start).
  data::Element next_;
  bool end_ = false;
  int64_t in_epoch_ = 0;  // batches of the current epoch done, skipped ones included
  std::vector<Tensor> outputs_;
  proto::RunOptions trace_options_;
  TracedStepMetadata traced_metadata_;
};

StatusOr<History> FitLoop::Run() {
  History history;
  for (int epoch = static_cast<int>(model_.position_.epoch);
       epoch < options_.epochs && !model_.stop_training_ && !Capped(); ++epoch) {
    WEFT_RETURN_IF_ERROR(StartEpoch(epoch));
    while (!end_ && !Capped() && !model_.stop_training_) WEFT_RETURN_IF_ERROR(RunStep(epoch));
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
  WEFT_RETURN_IF_ERROR(CheckElement(batch, 2, "Fit"));
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
  Logs logs = {{"loss", loss / static_cast<double>(outputs_.size())},
               {"examples", static_cast<double>(batch[0].dim_size(0))},
               {"seconds", seconds},
               {"batch", static_cast<double>(in_epoch_)},
               {"step", static_cast<double>(position.global_step)},
               {"steps", static_cast<double>(options_.steps_per_epoch)},
               {"epochs", static_cast<double>(options_.epochs)}};
  for (Callback* callback : options_.callbacks) {
    if (traced) {
      WEFT_RETURN_IF_ERROR(
          callback->OnTrainBatchTraced(model_, metadata->step_stats(), start_nanos, end_nanos));
    }
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

StatusOr<History> Model::Fit(const data::Dataset& dataset, const FitOptions& options) {
  WEFT_RETURN_IF_ERROR(CheckFitOptions(options));
  {
    // The graph is built from the first batch's shapes, before any callback runs.
    data::Element first;
    WEFT_RETURN_IF_ERROR(StartPass(dataset, 2, "Fit", &first).status());
  }
  stop_training_ = false;
  resume_.reset();
  position_.epoch = 0;
  position_.batch_index = 0;
  for (Callback* callback : options.callbacks) WEFT_RETURN_IF_ERROR(callback->OnTrainBegin(*this));
  int64_t skip = 0;
  if (resume_.has_value()) {
    position_ = *resume_;
    skip = resume_->batch_index;
  }
  FitLoop loop(*this, dataset, options, skip);
  WEFT_ASSIGN_OR_RETURN(History history, loop.Run());
  for (Callback* callback : options.callbacks) WEFT_RETURN_IF_ERROR(callback->OnTrainEnd(*this));
  return history;
}

StatusOr<Logs> Model::Evaluate(const data::Dataset& dataset) {
  data::Element batch;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<data::Iterator> iterator,
                        StartPass(dataset, 2, "Evaluate", &batch));
  bool end = false;
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(session_->Run({}, {}, {graph_->reset_metrics}, &outputs));
  while (!end) {
    WEFT_RETURN_IF_ERROR(CheckElement(batch, 2, "Evaluate"));
    WEFT_RETURN_IF_ERROR(RunBatch(batch, graph_->evaluation, /*allow_uneven=*/true, &outputs));
    WEFT_RETURN_IF_ERROR(iterator->GetNext(&batch, &end));
  }
  return ReadMetrics("");
}

StatusOr<Tensor> Model::Predict(const data::Dataset& dataset) {
  data::Element batch;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<data::Iterator> iterator,
                        StartPass(dataset, 1, "Predict", &batch));
  bool end = false;
  std::vector<Tensor> parts, outputs;
  while (!end) {
    WEFT_RETURN_IF_ERROR(CheckElement(batch, 1, "Predict"));
    WEFT_RETURN_IF_ERROR(RunBatch({batch[0]}, graph_->inference, /*allow_uneven=*/true, &outputs));
    parts.insert(parts.end(), outputs.begin(), outputs.end());
    WEFT_RETURN_IF_ERROR(iterator->GetNext(&batch, &end));
  }
  return ConcatRows(parts);
}

StatusOr<std::string> Model::Summary() const {
  if (graph_ == nullptr || graph_->calls.empty()) {
    return FailedPrecondition("model '", name_,
                              "' is not built yet: call Build, Fit, Evaluate or Predict first");
  }
  constexpr int kName = 34, kShape = 24;
  auto row = [](std::string a, std::string b, std::string c) {
    a.resize(std::max<size_t>(a.size() + 1, kName), ' ');
    b.resize(std::max<size_t>(b.size() + 1, kShape), ' ');
    return StrCat(" ", a, b, c, "\n");
  };
  const std::string rule(70, '_'), double_rule(70, '=');
  std::string text = StrCat("Model: \"", name_, "\"\n", rule, "\n",
                            row("Layer (type)", "Output Shape", "Param #"), double_rule, "\n");
  int64_t total = 0, trainable = 0;
  for (size_t i = 0; i < graph_->calls.size(); ++i) {
    const LayerCallContext::Call& call = graph_->calls[i];
    const int64_t params = call.layer->CountParams();
    total += params;
    for (const Variable& variable : call.layer->trainable_variables()) {
      trainable += variable.shape().num_elements();
    }
    text += row(StrCat(call.layer->name(), " (", call.layer->type(), ")"),
                ShapeText(call.output_shape), Thousands(params));
    text += StrCat(i + 1 == graph_->calls.size() ? double_rule : rule, "\n");
  }
  text += StrCat("Total params: ", Thousands(total), "\nTrainable params: ", Thousands(trainable),
                 "\nNon-trainable params: ", Thousands(total - trainable), "\n", rule, "\n");
  return text;
}

}  // namespace weft::train
