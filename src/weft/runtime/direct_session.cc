#include "weft/runtime/direct_session.h"

#include <atomic>
#include <chrono>
#include <map>

#include "weft/core/mutex.h"
#include "weft/core/notification.h"
#include "weft/core/thread_pool.h"
#include "weft/graph/graph_def_io.h"
#include "weft/graph/prune.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/collective/collective_executor_mgr.h"
#include "weft/runtime/collective/local_collective_executor.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/device_mgr.h"
#include "weft/runtime/step_executors.h"

namespace weft {
namespace {

int ThreadsOrDefault(int requested) { return requested > 0 ? requested : NumSchedulableCpus(); }

// How long idle inter-op threads poll before sleeping: a replicated step hands each partition to
// an inter-op thread when it starts and after every collective, and a sleeping thread takes ~30 us
// to wake here (thread_pool.h). Only a session that owns every core polls: one given a share of
// them (a worker of several on one host) would take its polling from its neighbours' compute
// (measured with W1 on 2 workers of 1 core: steps slowed from ~0.7 to ~2 ms for a fifth of an
// epoch).
constexpr int64_t kInterOpSpinMicros = 1000;

int64_t InterOpSpinMicros(const proto::ConfigProto& config) {
  return ThreadsOrDefault(config.intra_op_parallelism_threads()) >= NumSchedulableCpus()
             ? kInterOpSpinMicros
             : 0;
}

// What a cached signature needs at Run time: its executor and what each feed must look like.
struct PreparedStep {
  std::unique_ptr<StepExecutors> executors;
  std::vector<DataType> feed_types;
  std::vector<PartialShape> feed_shapes;
};

class DirectSession final : public Session {
  // A callable's prepared step (owned by prepared_) and its options.
  struct Callable {
    const PreparedStep* step;
    CallableOptions options;
  };

 public:
  explicit DirectSession(const SessionOptions& options)
      : options_(options),
        op_registry_(options.op_registry ? *options.op_registry : ops::AllOps()),
        kernel_registry_(options.kernel_registry ? *options.kernel_registry
                                                 : kernels::AllKernels()),
        devices_(CreateLocalDevices(
            options.config, ThreadsOrDefault(options.config.intra_op_parallelism_threads()),
            "localhost", /*task=*/0,
            options.device_factories ? *options.device_factories : DefaultDeviceFactories())),
        inter_op_pool_(std::make_unique<ThreadPool>(
            "inter_op", ThreadsOrDefault(options.config.inter_op_parallelism_threads()),
            InterOpSpinMicros(options.config))),
        graph_(std::make_unique<Graph>(op_registry_)) {
    UseSingleThreadedBlas();
  }

  ~DirectSession() override { Close().IgnoreError(); }

  Status Create(const proto::GraphDef& graph_def) override {
    MutexLock lock(mu_);
    WEFT_RETURN_IF_ERROR(CheckOpen());
    WEFT_RETURN_IF_ERROR(devices_.status());
    if (graph_->num_nodes() > 0) {
      return AlreadyExists("a graph has already been created for this session");
    }
    return ExtendLocked(graph_def);
  }

  Status Extend(const proto::GraphDef& graph_def) override {
    MutexLock lock(mu_);
    WEFT_RETURN_IF_ERROR(CheckOpen());
    return ExtendLocked(graph_def);
  }

  Status Run(const NamedTensorList& inputs, const std::vector<std::string>& output_names,
             const std::vector<std::string>& target_names, std::vector<Tensor>* outputs) override {
    return Run(proto::RunOptions(), inputs, output_names, target_names, outputs, nullptr);
  }

  Status Run(const proto::RunOptions& run_options, const NamedTensorList& inputs,
             const std::vector<std::string>& output_names,
             const std::vector<std::string>& target_names, std::vector<Tensor>* outputs,
             proto::RunMetadata* run_metadata) override {
    StepSignature signature;
    for (const auto& [name, value] : inputs) signature.feeds.push_back(name);
    signature.fetches = output_names;
    signature.targets = target_names;
    WEFT_ASSIGN_OR_RETURN(const PreparedStep* step, GetOrPrepare(signature));
    std::vector<Tensor> args;
    args.reserve(inputs.size());
    for (const auto& [name, value] : inputs) args.push_back(value);
    return RunPrepared(*step, run_options, signature.feeds, std::move(args),
                       static_cast<int>(output_names.size()), outputs, run_metadata);
  }

  StatusOr<CallableHandle> MakeCallable(const CallableOptions& options) override {
    StepSignature signature{options.feeds, options.fetches, options.targets};
    WEFT_ASSIGN_OR_RETURN(const PreparedStep* step, GetOrPrepare(signature));
    WEFT_ASSIGN_OR_RETURN(CallableHandle handle, Session::MakeCallable(options));
    MutexLock lock(mu_);
    prepared_callables_[handle] = std::make_shared<const Callable>(Callable{step, options});
    return handle;
  }

  // One lookup under the lock and no copy of the options: a callable is the hot path of a
  // coordinator's scheduled functions.
  Status RunCallable(CallableHandle handle, const std::vector<Tensor>& feeds,
                     std::vector<Tensor>* fetches, proto::RunMetadata* run_metadata) override {
    std::shared_ptr<const Callable> callable;
    {
      MutexLock lock(mu_);
      WEFT_RETURN_IF_ERROR(CheckOpen());
      auto it = prepared_callables_.find(handle);
      if (it != prepared_callables_.end()) callable = it->second;
    }
    if (callable == nullptr) {
      return InvalidArgument("callable ", handle, " does not exist (never made, or released)");
    }
    const CallableOptions& options = callable->options;
    WEFT_RETURN_IF_ERROR(CheckCallableFeeds(handle, options, feeds));
    return RunPrepared(*callable->step, options.run_options, options.feeds, feeds,
                       static_cast<int>(options.fetches.size()), fetches, run_metadata);
  }

  Status ReleaseCallable(CallableHandle handle) override {
    WEFT_RETURN_IF_ERROR(Session::ReleaseCallable(handle));
    MutexLock lock(mu_);
    prepared_callables_.erase(handle);
    return Status::OK();
  }

  Status ListDevices(std::vector<proto::DeviceAttributes>* devices) override {
    WEFT_RETURN_IF_ERROR(devices_.status());
    devices->clear();
    for (const Device* device : (*devices_)->ListDevices()) {
      proto::DeviceAttributes& attributes = devices->emplace_back();
      attributes.set_name(device->name());
      attributes.set_device_type(device->device_type());
      attributes.set_incarnation(device->incarnation());
    }
    return Status::OK();
  }

  Status Close() override {
    MutexLock lock(mu_);
    closed_ = true;
    return Status::OK();
  }

 private:
  // One step in flight: its arguments and results, cancellation, collectives and stats.
  struct StepCall {
    StepCall(std::vector<Tensor> args, int num_fetches)
        : call_frame(std::move(args), num_fetches) {}
    CallFrame call_frame;
    CancellationManager cancellation;
    StepStatsCollector stats;
    std::unique_ptr<CollectiveExecutor> collectives;
    int64_t step_id = 0;
    bool tracing = false;
  };

  // Checks each fed tensor against the graph's feed: dtype and shape, naming the feed.
  static Status CheckFeeds(const PreparedStep& step, const std::vector<std::string>& names,
                           const std::vector<Tensor>& args) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].dtype() != step.feed_types[i]) {
        return InvalidArgument("feed '", names[i], "' is ", DataTypeName(args[i].dtype()),
                               ", but the graph expects ", DataTypeName(step.feed_types[i]));
      }
      if (!step.feed_shapes[i].IsCompatibleWith(args[i].shape())) {
        return InvalidArgument("feed '", names[i], "' has shape ", args[i].shape(),
                               ", which is not compatible with the graph's ",
                               step.feed_shapes[i].DebugString());
      }
    }
    return Status::OK();
  }

  // The asynchronous core of every run: starts `call` on the step's executors and calls `done`
  // (on an executor thread) when the step ends.
  void RunStepAsync(const PreparedStep& step, StepCall& call, StatusCallback done) {
    StepExecutors::RunArgs run_args;
    run_args.step_id = call.step_id = next_step_id_.fetch_add(1);
    call.collectives = options_.collective_executor_mgr != nullptr
                           ? options_.collective_executor_mgr->NewStepExecutor(
                                 run_args.step_id, call.tracing ? &call.stats : nullptr)
                           : std::make_unique<LocalCollectiveExecutor>();
    run_args.call_frame = &call.call_frame;
    run_args.cancellation_manager = &call.cancellation;
    run_args.collective_executor = call.collectives.get();
    run_args.runner = [pool = inter_op_pool_.get()](std::function<void()> fn) {
      pool->Schedule(std::move(fn));
    };
    if (call.tracing) run_args.stats = &call.stats;
    step.executors->RunAsync(run_args, std::move(done));
  }

  // Runs a prepared step to its end (the blocking form of RunStepAsync), with the call's deadline.
  Status RunPrepared(const PreparedStep& step, const proto::RunOptions& run_options,
                     const std::vector<std::string>& feed_names, std::vector<Tensor> args,
                     int num_fetches, std::vector<Tensor>* outputs,
                     proto::RunMetadata* run_metadata) {
    WEFT_RETURN_IF_ERROR(CheckFeeds(step, feed_names, args));
    StepCall call(std::move(args), num_fetches);
    call.tracing = run_options.trace_level() != proto::RunOptions::NO_TRACE;
    Notification finished;
    Status status;
    RunStepAsync(step, call, [&](const Status& step_status) {
      status = step_status;
      finished.Notify();
    });
    int64_t timeout_ms = run_options.timeout_in_ms() > 0
                             ? run_options.timeout_in_ms()
                             : options_.config.operation_timeout_in_ms();
    if (timeout_ms > 0 &&
        !finished.WaitForNotificationWithTimeout(std::chrono::milliseconds(timeout_ms))) {
      call.cancellation.StartCancel();
      finished.WaitForNotification();
      return DeadlineExceeded("step ", call.step_id, " did not finish within ", timeout_ms, " ms");
    }
    finished.WaitForNotification();
    WEFT_RETURN_IF_ERROR(status);
    if (call.tracing && run_metadata != nullptr) {
      call.stats.Finalize(run_metadata->mutable_step_stats());
    }
    WEFT_ASSIGN_OR_RETURN(*outputs, call.call_frame.ConsumeRetvals());
    return Status::OK();
  }

  Status CheckOpen() const WEFT_REQUIRES(mu_) {
    if (closed_) return FailedPrecondition("the session has been closed");
    return Status::OK();
  }

  // Imports into a copy so that a bad GraphDef leaves the session's graph as it was.
  Status ExtendLocked(const proto::GraphDef& graph_def) WEFT_REQUIRES(mu_) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Graph> extended, CopyGraph(*graph_));
    WEFT_RETURN_IF_ERROR(ImportGraphDef(graph_def, extended.get()));
    graph_ = std::move(extended);
    return Status::OK();
  }

  StatusOr<const PreparedStep*> GetOrPrepare(const StepSignature& signature) {
    std::string key = StepSignatureKey(signature);
    MutexLock lock(mu_);
    WEFT_RETURN_IF_ERROR(CheckOpen());
    WEFT_RETURN_IF_ERROR(devices_.status());
    auto it = prepared_.find(key);
    if (it != prepared_.end()) return it->second.get();

    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Graph> step_graph, BuildStepGraph(*graph_, signature));
    auto step = std::make_unique<PreparedStep>();
    for (Node* node : step_graph->nodes()) {
      if (node->type_string() != "_Arg") continue;
      int64_t index = 0;
      WEFT_RETURN_IF_ERROR(GetNodeAttr(node->def(), "index", &index));
      if (static_cast<size_t>(index) >= step->feed_types.size()) {
        step->feed_types.resize(index + 1);
        step->feed_shapes.resize(index + 1);
      }
      step->feed_types[index] = node->output_type(0);
      step->feed_shapes[index] = node->output_shape(0);
    }
    WEFT_ASSIGN_OR_RETURN(step->executors,
                          StepExecutors::Create(std::move(step_graph), **devices_, kernel_registry_,
                                                options_.config));
    const PreparedStep* prepared = step.get();
    prepared_.emplace(std::move(key), std::move(step));
    return prepared;
  }

  const SessionOptions options_;
  const OpRegistry& op_registry_;
  const KernelRegistry& kernel_registry_;
  const StatusOr<std::unique_ptr<DeviceMgr>> devices_;  // an error here fails Create
  const std::unique_ptr<ThreadPool> inter_op_pool_;
  std::atomic<int64_t> next_step_id_{1};

  Mutex mu_;
  std::unique_ptr<Graph> graph_ WEFT_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<PreparedStep>> prepared_ WEFT_GUARDED_BY(mu_);
  std::map<CallableHandle, std::shared_ptr<const Callable>> prepared_callables_
      WEFT_GUARDED_BY(mu_);
  bool closed_ WEFT_GUARDED_BY(mu_) = false;
};

}  // namespace

StatusOr<std::unique_ptr<Session>> NewDirectSession(const SessionOptions& options) {
  return std::unique_ptr<Session>(new DirectSession(options));
}

}  // namespace weft
