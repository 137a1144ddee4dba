// Model: layers grouped into an object that trains, after the reference's Keras Model. A model is
// either functional — a function that calls layers on an Output — or Sequential (a list of layers
// applied in order). Compile names the optimizer, the loss, the metrics and the distribution
// strategy; Fit, Evaluate and Predict then run over a data::Dataset of batches:
//
//   Sequential model(Dense(256, "relu"), Dense(10));
//   model.Compile(NewMomentumOptimizer(0.05, 0.9), SparseCategoricalCrossentropy(true),
//                 {"accuracy"}, {.strategy = mirrored.get()});
//   History history = model.Fit(train.Batch(128), {.epochs = 3}).value();
//
// The same code trains on one device, several, or several worker processes: the model builds its
// graph once per replica through the strategy (Strategy::Run inside Strategy::Scope, so its
// layers' variables are mirrored), splits every batch the dataset gives evenly over the replicas
// (the global batch; an uneven training batch is an InvalidArgument naming both numbers),
// averages the replicas' gradients before every update and keeps the metrics' totals in
// sync-on-read variables. Under MultiWorkerMirroredStrategy every worker runs the same program
// over the same dataset and trains on its share of each global batch; its logs are its own
// replicas' (the loss, the metrics), and Evaluate and Predict run the whole dataset on each worker.
// The graph is built on first use from the first batch's shapes and dtypes (or by Build) and kept
// with its session for the model's life. A functional model may have several named inputs and
// outputs (Model::Signature): its dataset's elements then hold the inputs, then one label per
// output, in the signature's order; each output has its loss (Compile with losses by output name)
// and the model minimises their weighted sum. Not thread-safe; one call at a time.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/data/dataset.h"
#include "weft/distribute/coordinator/cluster_coordinator.h"
#include "weft/distribute/coordinator/per_worker_dataset.h"
#include "weft/distribute/strategy.h"
#include "weft/runtime/session.h"
#include "weft/train/dtype_policy.h"
#include "weft/train/exactly_once_steps.h"
#include "weft/train/layers/layer.h"
#include "weft/train/losses.h"
#include "weft/train/metrics.h"
#include "weft/train/optimizer.h"
#include "weft/train/train_checkpoints.h"
#include "weft/train/variable_snapshot.h"
#include "weft/train/worker_sessions.h"

namespace weft::train {

class Callback;
class FitLoop;
struct ModelGraph;
class ModelGraphBuilder;
struct ReplicaNames;

// Values by name: "loss", "accuracy", ... (and "val_loss", ... with validation data).
using Logs = std::map<std::string, double>;
// What callbacks keep across a stopped and resumed run, by name (Callback::State): int64 values,
// saved with each checkpoint by ModelCheckpoint.
using CallbackState = std::map<std::string, int64_t>;

// One example of the model's input (the batch dimension is left out): Input(shape=...).
struct InputSpec {
  PartialShape shape;
  DataType dtype = DataType::kFloat;
};

struct CompileOptions {
  // The strategy to train under; not owned, and it must outlive the model. Null: one device
  // (/cpu:0) through a OneDeviceStrategy the model makes.
  const distribute::Strategy* strategy = nullptr;
  // The session's thread pools (0: inter-op one per replica, intra-op one per core).
  int inter_op_threads = 0;
  int intra_op_threads = 0;
  // The session to train in: a target ("grpc://HOST:PORT", a cluster's master, whose devices the
  // strategy then names) and its config. Empty: a session in this process with the CPU devices
  // the strategy names.
  std::string target{};
  proto::ConfigProto session_config{};
  // A session in this process: the device factories that make the devices the strategy names
  // (by their type) and the kernels registered for them. Null: Weft's own (CPU).
  const DeviceFactoryRegistry* device_factories = nullptr;
  const KernelRegistry* kernel_registry = nullptr;
  // Under an asynchronous strategy: how long a lost worker's thread waits for the worker's server
  // to answer again (its session is then re-created and it takes steps again) before the worker
  // is retired and the others carry on.
  int64_t worker_recovery_timeout_ms = 60'000;
  // Training steps per run of the session (the reference's steps_per_execution): Fit feeds this
  // many batches at once to a graph that runs their steps one after the other, so a step's fixed
  // cost (a run through a master and its workers, a scheduled function under parameter servers)
  // is paid once for all of them. Logs and callbacks still see every step. Batches that do not
  // make up a whole execution (an epoch's end, steps_per_epoch, max_steps, a traced step) run one
  // at a time.
  int steps_per_execution = 1;
  // With several outputs: each output's weight in the loss the model minimises (the weighted sum
  // of the outputs' losses), by output name; an output not named weighs 1.
  std::map<std::string, double> loss_weights{};
  // Under an asynchronous strategy: every this many steps Fit keeps a snapshot of the variables in
  // this process (VariableSnapshot), from which a ps task that restarted is restored (0: none; a
  // restarted ps task then ends Fit with an error naming it).
  int64_t snapshot_every_steps = 100;
  // Under an asynchronous strategy: exactly-once input. Each step's variable updates wait on the
  // ps tasks until the step has succeeded and the coordinator commits them; a step whose worker
  // died is discarded there and run again elsewhere, so every batch of an epoch is applied once,
  // whichever worker dies when (exactly_once_steps.h; costs one more run to the ps tasks per
  // step). Needs steps_per_execution 1.
  bool exactly_once_input = false;
  // The model's random seed (random_seed.h): every random initializer and Dropout layer without a
  // seed of its own derives one from it and its variable's or layer's name. Unset: the global seed
  // (SetRandomSeed) as it is when the model is built; with neither, random every run.
  std::optional<int64_t> seed{};
  // Which types the layers compute in and keep their variables in (dtype_policy.h): "float32",
  // or "mixed_bfloat16" to run their matrix products in bfloat16 on a CPU that has bfloat16
  // instructions (elsewhere in float32, with a note in the log).
  DTypePolicy dtype_policy{};
};

struct FitOptions {
  int epochs = 1;
  int64_t steps_per_epoch = -1;  // -1: until the dataset ends; else at most this many batches
  // Stops once the global step (Model::position(), counting a resumed run's past) reaches this
  // (-1: no limit).
  int64_t max_steps = -1;
  std::vector<Callback*> callbacks{};  // not owned; called in order
  // Evaluated after each epoch (logs gain "val_<name>").
  std::optional<data::Dataset> validation_data{};
};

// Each epoch's logs, in order, and each one's epoch (from 0, as the reference's History.epoch): a
// Fit that resumed a stopped run (ModelCheckpoint) starts at the epoch it resumed in.
struct History {
  std::vector<Logs> epochs;
  std::vector<int> epoch;
};

class Model {
 public:
  // Builds the model's output from its input by calling layers (functional form).
  using CallFn = std::function<Output(const Scope& scope, const Output& input)>;
  // Builds the outputs (one per Signature::outputs name, in order) from the inputs (one per
  // Signature::inputs name, in order).
  using MultiCallFn =
      std::function<std::vector<Output>(const Scope& scope, const std::vector<Output>& inputs)>;
  // A functional model's named inputs and outputs, after the reference's Model(inputs={...},
  // outputs={...}). The names must be unique, non-empty node names.
  struct Signature {
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
  };

  explicit Model(CallFn call, std::string name = "model");
  Model(Signature signature, MultiCallFn call, std::string name = "model");
  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& name() const { return name_; }

  // FailedPrecondition when already compiled; InvalidArgument for a null optimizer, an empty loss
  // or an unknown metric. With several outputs, `loss` is every output's and each metric is
  // logged per output ("<output>_<metric>", beside "<output>_loss" and the total "loss").
  Status Compile(std::unique_ptr<Optimizer> optimizer, Loss loss,
                 const std::vector<std::string>& metrics = {}, CompileOptions options = {});
  // Each output's own loss, by output name (every output needs one; InvalidArgument naming an
  // output missing or unknown).
  Status Compile(std::unique_ptr<Optimizer> optimizer, std::map<std::string, Loss> losses,
                 const std::vector<std::string>& metrics = {}, CompileOptions options = {});
  // Builds the inference graph now for inputs of `input` (Fit, Evaluate and Predict build it on
  // first use otherwise), or of `inputs` (one per input, in the signature's order). Needs Compile.
  Status Build(const InputSpec& input);
  Status Build(const std::vector<InputSpec>& inputs);

  // Trains on the dataset's batches (elements (inputs, labels), batched): options.epochs passes,
  // each restarting the dataset. Returns each epoch's logs: "loss" (the mean of the batches'
  // losses, weighted by batch size) and each metric's epoch mean.
  StatusOr<History> Fit(const data::Dataset& dataset, const FitOptions& options = {});
  // Under an asynchronous strategy (ParameterServerStrategy), as the reference's Fit of a
  // DatasetCreator: every worker trains on a dataset of its own, which `dataset_fn` gives for its
  // InputContext and which the worker builds and reads itself, so no example passes through this
  // process (ClusterCoordinator::CreatePerWorkerDataset; datasets a worker can rebuild: no Map of
  // a C++ function). An epoch is options.steps_per_epoch steps, which is required (the datasets
  // should repeat), each on the next batch of the worker that runs it; a worker that was lost
  // rebuilds its dataset from the start when it returns. The graph is built for worker 0's first
  // batch, and each step counts that many examples. Refused with exactly_once_input (its leases
  // are of this process's batches) and with steps_per_execution > 1.
  StatusOr<History> Fit(const distribute::PerWorkerDatasetFn& dataset_fn,
                        const FitOptions& options);
  // The loss and metrics over the whole dataset, in inference mode.
  StatusOr<Logs> Evaluate(const data::Dataset& dataset);
  // The model's output for every example of the dataset (its elements' first components, the
  // inputs), in order, concatenated along dimension 0. A model of several outputs: PredictOutputs.
  StatusOr<Tensor> Predict(const data::Dataset& dataset);
  // Every output's, in the signature's order.
  StatusOr<std::vector<Tensor>> PredictOutputs(const data::Dataset& dataset);
  const Signature& signature() const { return signature_; }

  // A table of the layers called (name and type, output shape, parameter count) and the totals,
  // like the reference's model.summary(). Needs the model built.
  StatusOr<std::string> Summary() const;

  // The variables of the layers called (replica 0's components under a strategy), in order of
  // creation; empty before the model is built.
  std::vector<Variable> variables() const;
  std::vector<Variable> trainable_variables() const;
  // Every variable the model keeps, with its per-replica components: the layers' weights and
  // statistics, the optimizer's slots and learning rate (made through the strategy) and the
  // metrics' totals (sync-on-read); what ModelCheckpoint saves. Empty before the model is built.
  std::vector<std::shared_ptr<distribute::DistributedVariable>> distributed_variables() const;

  // Writes the layers' weights (variables(): kernels, biases, moving statistics; not the
  // optimizer's slots nor the metrics) to the directory `path` in Weft's checkpoint format
  // (safetensors shards and a manifest, docs/checkpoints.md), replacing what is there; named like
  // the variables ("dense/kernel"). Needs the model built. Under MultiWorkerMirroredStrategy only
  // the chief writes; the others return OK.
  Status SaveWeights(const std::string& path);
  // Sets the layers' weights from the directory `path` (SaveWeights' output, or a ModelCheckpoint
  // checkpoint "ckpt-<step>"), matched by name; tensors the model has no variable for are ignored.
  // A built model loads now; one not yet built checks the file now and loads when it is built
  // (Build, or the first Fit, Evaluate or Predict), so Compile, LoadWeights and Predict need no
  // training data. A weight missing from the file, or of another dtype or shape, is an error
  // naming the variable and the file, before any weight changes (a file found corrupt while it
  // is read may leave some weights loaded: load again).
  Status LoadWeights(const std::string& path);

  // For callbacks: ends Fit after the current epoch.
  void StopTraining() { stop_training_ = true; }
  // Where training stands: steps run over every Fit (global_step), and within the current Fit
  // the epoch and the batches done in it (shuffle_seed is unused).
  const TrainPosition& position() const { return position_; }
  // For callbacks, from OnTrainBegin (ModelCheckpoint): Fit continues a run that stopped at
  // `position` (epochs count from that run's start): it starts in position.epoch, skipping the
  // batches done (Dataset::MakeIterator(epoch) recreates that epoch's order) and keeping the
  // metrics' totals, which the checkpoint restored. Once every callback's OnTrainBegin ran, each
  // gets `callback_state` (what the checkpoint held of Callbacks' State) through RestoreState.
  void ResumeAt(const TrainPosition& position, CallbackState callback_state = {}) {
    resume_ = position;
    resume_state_ = std::move(callback_state);
  }
  // For callbacks, during Fit (ModelCheckpoint): the State of every callback of this Fit, merged;
  // InvalidArgument naming a name two callbacks both use.
  StatusOr<CallbackState> CallbackStates() const;
  // For callbacks: adds nodes to the model's graph (`build` gets its root scope) and sends them
  // to the session. Needs the model built.
  Status AddToGraph(const std::function<Status(const Scope& root)>& build);
  // For callbacks: the current learning rate, and a new one for the next steps. Under an
  // optimizer's learning-rate schedule: the rate of the next step, and FailedPrecondition.
  double learning_rate() const {
    const LearningRateSchedule* schedule = optimizer_ ? optimizer_->schedule() : nullptr;
    return schedule != nullptr ? schedule->ValueAt(position_.global_step) : learning_rate_;
  }
  Status SetLearningRate(double learning_rate);
  // The session that holds the model's variables (null before the model is built), and the
  // strategy it trains under (null before Compile).
  Session* session() const { return session_.get(); }
  const distribute::Strategy* strategy() const { return strategy_; }
  // Under an asynchronous strategy: steps put back on the queue because their worker was lost,
  // and lost workers whose sessions were re-created, so far (0 otherwise).
  int64_t rescheduled_steps() const;
  int64_t worker_recoveries() const;
  // Under an asynchronous strategy: per-worker datasets made again on workers that returned.
  int64_t per_worker_datasets_rebuilt() const;
  // Under an asynchronous strategy: ps tasks restored from the snapshot after they restarted, and
  // the steps whose updates were lost with them (done after the snapshot, before the restart).
  int64_t ps_recoveries() const { return ps_recoveries_.load(); }
  int64_t steps_lost() const { return steps_lost_.load(); }
  // Under exactly_once_input: steps whose input was leased again after their worker was lost (so
  // run twice, applied once), and steps whose commit failed (a ps task lost on the way).
  int64_t input_shards_reissued() const { return input_shards_reissued_.load(); }
  int64_t lost_commits() const { return exactly_once_ ? exactly_once_->lost_commits() : 0; }
  // Under an asynchronous strategy: the checkpoints a ps task that restarted may also be restored
  // from (ModelCheckpoint's, set for its Fit; null: none), when they are newer than the snapshot.
  void SetRecoveryCheckpoints(const TrainCheckpoints* checkpoints) WEFT_EXCLUDES(recovery_mu_) {
    MutexLock lock(recovery_mu_);
    recovery_checkpoints_ = checkpoints;
  }

 protected:
  explicit Model(std::string name);
  Model(Signature signature, std::string name);
  void set_call(CallFn call);
  void set_call(MultiCallFn call) { call_ = std::move(call); }

 private:
  friend struct ModelGraph;
  friend class FitLoop;
  // Builds what is missing: the inference graph for `inputs`, and with `labels` (the first
  // batch's, one per output) the training and evaluation graphs.
  Status EnsureBuilt(const std::vector<InputSpec>& inputs, const std::vector<Tensor>* labels);
  // The model's graph, made (empty) on first use.
  ModelGraph& EnsureGraph();
  // A builder of the graph's parts for the graph's inputs and, for the parts with labels,
  // `labels` (the first batch's; null for inference alone).
  std::unique_ptr<ModelGraphBuilder> NewGraphBuilder(const std::vector<Tensor>* labels);
  // Takes the variables made since into the model, sends the graph's new nodes to the session
  // and runs the new initializers (SendNewNodes).
  Status SendPendingNodes();
  // The training part that reads a per-worker dataset's `element` on the worker (labels: the
  // first batch's), sent to the workers' sessions.
  Status BuildPerWorkerTraining(const std::vector<Output>& element,
                                const std::vector<Tensor>& labels);
  // Checks and stores what both Compile overloads were given (one loss per output).
  Status CompileWith(std::unique_ptr<Optimizer> optimizer, std::vector<Loss> losses,
                     const std::vector<std::string>& metrics, CompileOptions options);
  // A dataset element's components: the inputs, then (with labels) one label per output.
  size_t NumComponents(bool with_labels) const {
    return signature_.inputs.size() + (with_labels ? signature_.outputs.size() : 0);
  }
  // Feeds every replica its slice of `batch` (inputs, and labels when `names` has them), fetches
  // the replicas' outputs and runs their steps: the whole batch on replica 0 alone when it does
  // not split evenly and `allow_uneven` (inference needs no other replica).
  Status RunBatch(const data::Element& batch, const ReplicaNames& names, bool allow_uneven,
                  std::vector<Tensor>* outputs, const proto::RunOptions* run_options = nullptr,
                  proto::RunMetadata* metadata = nullptr);
  // What RunBatch runs: the feeds, fetches and targets of `batch`.
  struct BatchStep {
    NamedTensorList feeds;
    std::vector<std::string> fetches;
    std::vector<std::string> targets;
  };
  StatusOr<BatchStep> PrepareBatch(const data::Element& batch, const ReplicaNames& names,
                                   bool allow_uneven) const;
  // The same for the steps_per_execution batches of one execution of the unrolled training
  // graph: step k's feeds are batches[k]'s, and the fetches every step's loss, step-major per
  // replica.
  StatusOr<BatchStep> PrepareExecution(const std::vector<data::Element>& batches) const;
  // Adds `batch`'s feeds for step `step` of `names` (of `steps` per run) to *out.
  Status AddBatchFeeds(const data::Element& batch, const ReplicaNames& names, bool allow_uneven,
                       int step, int steps, BatchStep* out) const;
  // Under an asynchronous strategy, the session `worker` runs its steps in now.
  std::shared_ptr<Session> WorkerSession(int worker) const {
    return worker_sessions_->session(worker);
  }
  // When the strategy runs its steps on several workers' sessions
  // (StrategyExtended::WorkerSessionOptions): creates them with `graph`, the coordinator, and
  // session_, which runs the model's own calls in any worker's session that is there.
  Status StartWorkerSessions(const SessionOptions& configured, const proto::GraphDef& graph);
  StatusOr<Logs> ReadMetrics(const std::string& prefix);
  // Under an asynchronous strategy: builds the variables' snapshot and takes it (Fit, before its
  // first step), and takes it again when `global_step` is due.
  Status PrepareSnapshots();
  Status MaybeSnapshot(int64_t global_step);
  // WorkerSessions' RestoreTasksFn: the variables of `tasks` from the newest state this process
  // has of them (the snapshot, or the latest checkpoint when it is newer), through `session`.
  Status RestoreTasks(Session& session, const std::vector<std::string>& tasks)
      WEFT_EXCLUDES(recovery_mu_);
  // Starts a pass over `dataset` for `what` ("Fit", ...): its iterator, positioned after the first
  // batch (in *first), checked to hold the inputs (and `with_labels`, the labels), and the model
  // built for it.
  StatusOr<std::unique_ptr<data::Iterator>> StartPass(const data::Dataset& dataset,
                                                      bool with_labels, std::string_view what,
                                                      data::Element* first);
  // "inputs" / "input 'ids'", "labels" / "labels of 'ctr'": what component `component` holds.
  std::string ComponentName(size_t component) const;
  // InvalidArgument naming `what` unless `element` holds NumComponents(with_labels) batched
  // components.
  Status CheckElement(const data::Element& element, bool with_labels, std::string_view what) const;
  // What the loss and the metrics of output `output` say of a batch's `labels` on the host (a
  // binary loss refuses a label outside [0, 1]).
  Status CheckLabels(size_t output, const Tensor& labels) const;
  std::vector<Variable> LayerVariables(bool trainable_only) const;
  // Takes the strategy's variables made since the last call into the model's own list.
  void AdoptNewVariables();
  // Sends the graph's new nodes to the session (creating it on first use) and runs
  // `initializers`, then, under MultiWorkerMirroredStrategy, the broadcast from the chief.
  Status SendNewNodes(std::vector<Output> initializers);
  // The checkpoint of the layers' variables, built into the graph on first use (model_weights.cc).
  StatusOr<checkpoint::Checkpoint*> WeightsCheckpoint();
  // Restores the layers' variables from `path` (LoadWeights on a built model).
  Status RestoreWeights(const std::string& path);
  // Once the model is built: the weights LoadWeights left pending, if any (kept pending until
  // they load, so a failed load fails every later call instead of running on initial values).
  Status LoadPendingWeights();

  std::string name_;
  Signature signature_;
  MultiCallFn call_;
  std::unique_ptr<Optimizer> optimizer_;
  // Per output, in the signature's order: its loss, its weight and its metrics.
  std::vector<Loss> losses_;
  std::vector<double> loss_weights_;
  std::vector<std::vector<Metric>> metrics_;
  CompileOptions options_;
  std::unique_ptr<distribute::Strategy> owned_strategy_;
  const distribute::Strategy* strategy_ = nullptr;
  std::unique_ptr<ModelGraph> graph_;
  std::unique_ptr<Session> session_;
  // Under an asynchronous strategy: every worker's session (session_ runs in them), and the
  // coordinator that runs Fit's steps on them (destroyed first: its threads use the sessions).
  std::unique_ptr<WorkerSessions> worker_sessions_;
  std::unique_ptr<distribute::ClusterCoordinator> coordinator_;
  // Under an asynchronous strategy: the variables' snapshot (made by Fit before its first step,
  // then read by the workers' threads when they restore a ps task), the steps Fit has finished,
  // and what the restores counted.
  std::unique_ptr<VariableSnapshot> snapshot_;
  std::atomic<int64_t> steps_finished_{0};
  std::atomic<int64_t> ps_recoveries_{0};
  std::atomic<int64_t> steps_lost_{0};
  // Under exactly_once_input: runs the training steps (made when the training part is built).
  std::unique_ptr<ExactlyOnceSteps> exactly_once_;
  // During a Fit of per-worker datasets: the step every scheduled function runs (nothing fed).
  std::optional<BatchStep> per_worker_step_;
  std::atomic<int64_t> input_shards_reissued_{0};
  // Held while a worker's thread restores a ps task from them.
  Mutex recovery_mu_;
  const TrainCheckpoints* recovery_checkpoints_ WEFT_GUARDED_BY(recovery_mu_) = nullptr;
  double learning_rate_ = 0;
  bool stop_training_ = false;
  TrainPosition position_;
  std::optional<TrainPosition> resume_;
  CallbackState resume_state_;
  std::vector<Callback*> fit_callbacks_;  // the current Fit's (not owned); empty outside Fit
  // SaveWeights' and LoadWeights' checkpoint of the layers' variables (made on first use), and
  // the weights LoadWeights left for the build to load.
  std::unique_ptr<checkpoint::Checkpoint> weights_checkpoint_;
  std::optional<std::string> pending_weights_;
};

// Layers applied one after the other: Sequential(Dense(256, "relu"), Dense(10)). Takes the layers
// by value (they are moved in) and owns them.
class Sequential final : public Model {
 public:
  template <typename... Layers>
  explicit Sequential(Layers&&... layers) : Model("sequential") {
    (Add(std::forward<Layers>(layers)), ...);
    set_call([this](const Scope& scope, const Output& input) { return Apply(scope, input); });
  }

  // Appends a layer; returns the model's copy.
  template <typename L>
  std::decay_t<L>& Add(L&& layer) {
    auto owned = std::make_unique<std::decay_t<L>>(std::forward<L>(layer));
    std::decay_t<L>& added = *owned;
    layers_.push_back(std::move(owned));
    return added;
  }
  // Appends a layer made elsewhere (StandardLayers); returns it.
  Layer& Add(std::unique_ptr<Layer> layer) {
    layers_.push_back(std::move(layer));
    return *layers_.back();
  }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }

 private:
  Output Apply(const Scope& scope, const Output& input);

  std::vector<std::unique_ptr<Layer>> layers_;
};

}  // namespace weft::train
