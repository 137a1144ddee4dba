// Model's Fit (its loop is fit_loop.cc's), Evaluate and Predict and its Summary (the graph is
// built in model.cc, by model_graph_builder.cc's steps).
#include <algorithm>
#include <cstring>
#include <vector>

#include "weft/core/str_util.h"
#include "weft/train/callbacks.h"
#include "weft/train/fit_loop.h"
#include "weft/train/model_graph.h"

namespace weft::train {
namespace {

InputSpec SpecOf(const Tensor& batch) {
  std::vector<int64_t> dims;
  for (int i = 1; i < batch.dims(); ++i) dims.push_back(batch.dim_size(i));
  return {PartialShape(std::move(dims)), batch.dtype()};
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
  WEFT_ASSIGN_OR_RETURN(BatchStep step, PrepareBatch(batch, names, allow_uneven));
  if (run_options != nullptr) {
    return session_->Run(*run_options, step.feeds, step.fetches, step.targets, outputs, metadata);
  }
  return session_->Run(step.feeds, step.fetches, step.targets, outputs);
}

StatusOr<Model::BatchStep> Model::PrepareBatch(const data::Element& batch,
                                               const ReplicaNames& names, bool allow_uneven) const {
  BatchStep step;
  WEFT_RETURN_IF_ERROR(AddBatchFeeds(batch, names, allow_uneven, 0, 1, &step));
  return step;
}

StatusOr<Model::BatchStep> Model::PrepareExecution(
    const std::vector<data::Element>& batches) const {
  const ReplicaNames& names = graph_->unrolled_training;
  const int steps = static_cast<int>(batches.size());
  BatchStep step;
  for (int k = 0; k < steps; ++k) {
    WEFT_RETURN_IF_ERROR(
        AddBatchFeeds(batches[k], names, /*allow_uneven=*/false, k, steps, &step)
            .WithContext(StrCat("batch ", k + 1, " of ", steps, " in an execution")));
  }
  return step;
}

Status Model::AddBatchFeeds(const data::Element& batch, const ReplicaNames& names,
                            bool allow_uneven, int step, int steps, BatchStep* out) const {
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
  const size_t inputs = signature_.inputs.size();
  const size_t outputs = signature_.outputs.size();
  for (size_t c = 0; c < NumComponents(with_labels); ++c) {
    if (batch[c].dim_size(0) != examples) {
      return InvalidArgument("the batch's ", ComponentName(c), " has ", batch[c].dim_size(0),
                             " examples but its ", ComponentName(0), " ", examples);
    }
    if (c >= inputs) WEFT_RETURN_IF_ERROR(CheckLabels(c - inputs, batch[c]));
    Tensor share = batch[c];
    if (!allow_uneven) {
      WEFT_ASSIGN_OR_RETURN(share, strategy_->WorkerShare(batch[c]));
    }
    std::vector<Tensor> slices = {share};
    if (used > 1) {
      WEFT_ASSIGN_OR_RETURN(slices, strategy_->SplitBatch(share));
    }
    for (int r = 0; r < used; ++r) {
      const std::string& placeholder = c < inputs ? names.inputs[r][step * inputs + c]
                                                  : names.labels[r][step * outputs + (c - inputs)];
      out->feeds.emplace_back(placeholder, std::move(slices[r]));
    }
  }
  if (step + 1 < steps) return Status::OK();
  // After the last step's feeds: every replica's fetches (step-major) and its step.
  for (int r = 0; r < used; ++r) {
    out->fetches.insert(out->fetches.end(), names.outputs[r].begin(), names.outputs[r].end());
    if (!names.steps[r].empty()) out->targets.push_back(names.steps[r]);
  }
  return Status::OK();
}

Status Model::CheckLabels(size_t output, const Tensor& labels) const {
  Status status = losses_[output].CheckLabels(labels);
  for (size_t m = 0; status.ok() && m < metrics_[output].size(); ++m) {
    status = metrics_[output][m].CheckLabels(labels);
  }
  if (status.ok() || signature_.outputs.size() == 1) return status;
  return status.WithContext(ComponentName(signature_.inputs.size() + output));
}

std::string Model::ComponentName(size_t component) const {
  const size_t inputs = signature_.inputs.size();
  if (component < inputs) {
    return inputs == 1 ? "inputs" : StrCat("input '", signature_.inputs[component], "'");
  }
  return signature_.outputs.size() == 1
             ? "labels"
             : StrCat("labels of '", signature_.outputs[component - inputs], "'");
}

Status Model::CheckElement(const data::Element& element, bool with_labels,
                           std::string_view what) const {
  const size_t components = NumComponents(with_labels);
  if (element.size() < components) {
    std::vector<std::string> expected;
    for (size_t c = 0; c < components; ++c) expected.push_back(ComponentName(c));
    return InvalidArgument(what, " needs dataset elements of ", components,
                           components == 1 ? " component (" : " components (",
                           StrJoin(expected, ", "), "), got ", element.size());
  }
  // Components beyond the labels would be dropped unread: per-example weights, which Weft does
  // not take, or a dataset built for another model. Predict also takes elements that still hold
  // the labels (an Evaluate dataset), as the reference does.
  const size_t most = NumComponents(/*with_labels=*/true);
  if (element.size() > most) {
    std::vector<std::string> expected;
    for (size_t c = 0; c < most; ++c) expected.push_back(ComponentName(c));
    return InvalidArgument(what, ": model '", name_, "' takes dataset elements of ", most,
                           " components (", StrJoin(expected, ", "), "), but the dataset's have ",
                           element.size(),
                           "; the extra ones would be ignored (per-example "
                           "weights are not supported): drop them with Dataset::Map");
  }
  for (size_t c = 0; c < components; ++c) {
    if (element[c].dims() < 1) {
      return InvalidArgument(what, " needs batched elements (Dataset::Batch), but component ", c,
                             " (", ComponentName(c), ") is a scalar");
    }
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<data::Iterator>> Model::StartPass(const data::Dataset& dataset,
                                                           bool with_labels, std::string_view what,
                                                           data::Element* first) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<data::Iterator> iterator, dataset.MakeIterator());
  bool end = false;
  WEFT_RETURN_IF_ERROR(iterator->GetNext(first, &end));
  if (end) return InvalidArgument(what, ": the dataset is empty");
  WEFT_RETURN_IF_ERROR(CheckElement(*first, with_labels, what));
  const size_t inputs = signature_.inputs.size();
  std::vector<InputSpec> specs;
  for (size_t i = 0; i < inputs; ++i) specs.push_back(SpecOf((*first)[i]));
  std::vector<Tensor> labels(
      first->begin() + inputs,
      first->begin() + static_cast<std::ptrdiff_t>(NumComponents(with_labels)));
  WEFT_RETURN_IF_ERROR(EnsureBuilt(specs, with_labels ? &labels : nullptr));
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
  if (const LearningRateSchedule* schedule = optimizer_ ? optimizer_->schedule() : nullptr) {
    return FailedPrecondition("SetLearningRate: model '", name_,
                              "' trains with a learning-rate schedule (", schedule->DebugString(),
                              "), which sets the rate of every step");
  }
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

StatusOr<History> Model::Fit(const data::Dataset& dataset, const FitOptions& options) {
  WEFT_RETURN_IF_ERROR(CheckFitOptions(options));
  {
    // The graph is built from the first batch's shapes, before any callback runs.
    data::Element first;
    WEFT_RETURN_IF_ERROR(StartPass(dataset, /*with_labels=*/true, "Fit", &first).status());
  }
  stop_training_ = false;
  resume_.reset();
  resume_state_.clear();
  position_.epoch = 0;
  position_.batch_index = 0;
  // The callbacks are the model's to hand out (CallbackStates) for this Fit only, as are the
  // checkpoints a ModelCheckpoint lends for restoring a ps task (SetRecoveryCheckpoints).
  fit_callbacks_ = options.callbacks;
  struct Forget {
    Model& model;
    ~Forget() {
      model.fit_callbacks_.clear();
      model.SetRecoveryCheckpoints(nullptr);
    }
  } forget{*this};
  for (Callback* callback : options.callbacks) WEFT_RETURN_IF_ERROR(callback->OnTrainBegin(*this));
  int64_t skip = 0;
  if (resume_.has_value()) {
    position_ = *resume_;
    skip = resume_->batch_index;
    // After every OnTrainBegin, which starts each callback afresh.
    for (Callback* callback : options.callbacks) {
      WEFT_RETURN_IF_ERROR(callback->RestoreState(resume_state_));
    }
  }
  FitLoop loop(*this, dataset, options, skip);
  WEFT_ASSIGN_OR_RETURN(History history, loop.Run());
  for (Callback* callback : options.callbacks) WEFT_RETURN_IF_ERROR(callback->OnTrainEnd(*this));
  return history;
}

StatusOr<CallbackState> Model::CallbackStates() const {
  CallbackState merged;
  for (const Callback* callback : fit_callbacks_) {
    for (auto& [name, value] : callback->State()) {
      if (!merged.emplace(name, value).second) {
        return InvalidArgument("two callbacks of this Fit keep state named '", name,
                               "' (two EarlyStopping on one monitor?)");
      }
    }
  }
  return merged;
}

StatusOr<Logs> Model::Evaluate(const data::Dataset& dataset) {
  data::Element batch;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<data::Iterator> iterator,
                        StartPass(dataset, /*with_labels=*/true, "Evaluate", &batch));
  bool end = false;
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(session_->Run({}, {}, {graph_->reset_metrics}, &outputs));
  for (int64_t number = 1; !end; ++number) {
    const std::string where = StrCat("Evaluate at batch ", number);
    WEFT_RETURN_IF_ERROR(CheckElement(batch, /*with_labels=*/true, "Evaluate").WithContext(where));
    WEFT_RETURN_IF_ERROR(
        RunBatch(batch, graph_->evaluation, /*allow_uneven=*/true, &outputs).WithContext(where));
    WEFT_RETURN_IF_ERROR(iterator->GetNext(&batch, &end));
  }
  return ReadMetrics("");
}

StatusOr<Tensor> Model::Predict(const data::Dataset& dataset) {
  if (signature_.outputs.size() != 1) {
    return FailedPrecondition("Predict: model '", name_, "' has ", signature_.outputs.size(),
                              " outputs (", StrJoin(signature_.outputs, ", "),
                              "); PredictOutputs gives each");
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, PredictOutputs(dataset));
  return std::move(outputs[0]);
}

StatusOr<std::vector<Tensor>> Model::PredictOutputs(const data::Dataset& dataset) {
  data::Element batch;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<data::Iterator> iterator,
                        StartPass(dataset, /*with_labels=*/false, "Predict", &batch));
  const size_t num_outputs = signature_.outputs.size();
  bool end = false;
  // Per output, its batches' parts (each replica's, in order).
  std::vector<std::vector<Tensor>> parts(num_outputs);
  std::vector<Tensor> outputs;
  for (int64_t number = 1; !end; ++number) {
    const std::string where = StrCat("Predict at batch ", number);
    WEFT_RETURN_IF_ERROR(CheckElement(batch, /*with_labels=*/false, "Predict").WithContext(where));
    batch.resize(signature_.inputs.size());
    WEFT_RETURN_IF_ERROR(
        RunBatch(batch, graph_->inference, /*allow_uneven=*/true, &outputs).WithContext(where));
    // The fetches are replica-major: replica 0's outputs, then replica 1's, ...
    for (size_t i = 0; i < outputs.size(); ++i) {
      parts[i % num_outputs].push_back(std::move(outputs[i]));
    }
    WEFT_RETURN_IF_ERROR(iterator->GetNext(&batch, &end));
  }
  std::vector<Tensor> results;
  for (const std::vector<Tensor>& output : parts) {
    WEFT_ASSIGN_OR_RETURN(Tensor whole, ConcatRows(output));
    results.push_back(std::move(whole));
  }
  return results;
}

StatusOr<std::string> Model::Summary() const {
  if (graph_ == nullptr || graph_->calls.empty()) {
    return FailedPrecondition("model '", name_,
                              "' is not built yet: call Build, Fit, Evaluate or Predict first");
  }
  // The rows first: each column is as wide as its longest entry (and at least the reference's
  // width), so a long layer name or shape keeps the columns aligned.
  std::vector<std::vector<std::string>> rows = {{"Layer (type)", "Output Shape", "Param #"}};
  int64_t total = 0, trainable = 0;
  for (const LayerCallContext::Call& call : graph_->calls) {
    const int64_t params = call.layer->CountParams();
    total += params;
    for (const Variable& variable : call.layer->trainable_variables()) {
      trainable += variable.shape().num_elements();
    }
    rows.push_back({StrCat(call.layer->name(), " (", call.layer->type(), ")"),
                    ShapeText(call.output_shape), Thousands(params)});
  }
  size_t widths[3] = {33, 23, 7};
  for (const auto& row : rows) {
    for (size_t c = 0; c < 3; ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string text = " ";
    for (size_t c = 0; c < 3; ++c) {
      text += row[c];
      if (c < 2) text += std::string(widths[c] + 1 - row[c].size(), ' ');
    }
    return text + "\n";
  };
  const size_t width = std::max<size_t>(70, 1 + widths[0] + 1 + widths[1] + 1 + widths[2]);
  const std::string rule(width, '_'), double_rule(width, '=');
  std::string text =
      StrCat("Model: \"", name_, "\"\n", rule, "\n", line(rows[0]), double_rule, "\n");
  for (size_t i = 1; i < rows.size(); ++i) {
    text += line(rows[i]);
    text += StrCat(i + 1 == rows.size() ? double_rule : rule, "\n");
  }
  text += StrCat("Total params: ", Thousands(total), "\nTrainable params: ", Thousands(trainable),
                 "\nNon-trainable params: ", Thousands(total - trainable), "\n", rule, "\n");
  return text;
}

}  // namespace weft::train
