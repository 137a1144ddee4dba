#include "weft/runtime/executor/executor.h"

#include <chrono>
#include <memory>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/notification.h"
#include "weft/framework/node_def_util.h"
#include "weft/runtime/executor/executor_graph.h"
#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {
namespace internal {

// A thread hop costs tens of microseconds here; nodes cheaper than this run where they became
// ready.
constexpr int64_t kInlineCostNanos = 10'000;

bool NodeItem::RunsInline() const {
  if (declared_cheap) return true;
  int64_t cost = average_cost_nanos.load(std::memory_order_relaxed);
  return cost >= 0 && cost < kInlineCostNanos;
}

void NodeItem::RecordCost(int64_t nanos) const {
  int64_t old = average_cost_nanos.load(std::memory_order_relaxed);
  average_cost_nanos.store(old < 0 ? nanos : (old * 7 + nanos) / 8, std::memory_order_relaxed);
}

}  // namespace internal

namespace {

using internal::ExecutorGraph;
using internal::NodeItem;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Prefixes a kernel's error with the node, unless the kernel already named it.
Status AttributeToNode(const Status& status, const Node& node) {
  std::string prefix = FormatNodeForError(node.def());
  if (status.message().find(prefix) != std::string::npos) return status;
  return status.WithContext(prefix);
}

// The device's stream when its kernels finish after Compute returns; null for a synchronous device,
// whose nodes then pay nothing for the seam but one branch.
DeviceContext* StreamOf(const Device& device) {
  DeviceContext* context = device.device_context();
  return context != nullptr && context->IsAsync() ? context : nullptr;
}

// The state of one step of one executor. Shared by the closures of the step; freed with the last.
class StepState : public std::enable_shared_from_this<StepState> {
 public:
  StepState(const ExecutorGraph& graph, const Device& device, const Executor::Args& args,
            StatusCallback done)
      : graph_(graph),
        device_(device),
        args_(args),
        done_(std::move(done)),
        stream_(StreamOf(device)),
        inputs_(graph.total_inputs),
        pending_(new std::atomic<int>[graph.items.size()]) {
    for (size_t i = 0; i < graph.items.size(); ++i) {
      pending_[i].store(graph.items[i].initial_pending, std::memory_order_relaxed);
    }
    // Each node runs at most once a step: one slot each.
    if (args_.stats != nullptr) records_.resize(graph.items.size());
  }

  void Start() {
    const std::vector<int>& roots = graph_.roots;
    if (roots.empty()) {
      done_(Status::OK());
      return;
    }
    outstanding_.store(static_cast<int>(roots.size()));
    // All roots but the last go to the runner; the caller's thread works on the last one. On a
    // stream, launching is only enqueueing: this thread launches them all.
    for (size_t i = 0; i + 1 < roots.size(); ++i) {
      if (stream_ != nullptr) {
        Process(roots[i]);
        continue;
      }
      auto self = shared_from_this();
      int id = roots[i];
      args_.runner([self, id] { self->Process(id); });
    }
    Process(roots.back());
  }

 private:
  // Runs `first` and then every node queued inline behind it on this thread.
  void Process(int first) {
    std::vector<int> inline_queue = {first};
    std::vector<int> ready;
    while (!inline_queue.empty()) {
      int id = inline_queue.back();
      inline_queue.pop_back();
      const NodeItem& item = graph_.items[id];
      if (failed_.load(std::memory_order_acquire) || CheckCancelled()) {
        NodeDone();
        continue;
      }
      if (stream_ != nullptr) {
        Launch(id, &inline_queue);
        continue;
      }
      auto inputs = TakeInputs(item);
      OpKernelContext::Params params = ParamsFor(item, inputs.get());
      if (item.is_async) {
        RunAsyncNode(id, params, std::move(inputs));
        continue;
      }
      int64_t start_wall = args_.stats ? StepStatsNowNanos() : 0;
      int64_t start = NowNanos();
      OpKernelContext context(params);
      Status status = item.kernel->Compute(&context);
      int64_t cost = NowNanos() - start;
      item.RecordCost(cost);
      if (args_.stats) RecordNode(id, start_wall, cost, *inputs, context.outputs());
      ready.clear();
      if (FinishNode(item, status, &context, &ready)) {
        ScheduleReady(ready, &inline_queue);
      }
      context.outputs().clear();
      inputs.reset();  // releases inputs and outputs no one else holds
      NodeDone();      // may end the step: touch nothing after it
    }
  }

  void RunAsyncNode(int id, const OpKernelContext::Params& params,
                    std::unique_ptr<std::vector<Tensor>> inputs) {
    const NodeItem& item = graph_.items[id];
    auto context = std::make_shared<OpKernelContext>(params);
    int64_t start_wall = args_.stats ? StepStatsNowNanos() : 0;
    int64_t start = NowNanos();
    auto self = shared_from_this();
    std::shared_ptr<std::vector<Tensor>> held_inputs = std::move(inputs);
    item.kernel->AsAsync()->ComputeAsync(
        context.get(), [self, id, &item, context, held_inputs, start, start_wall]() {
          if (self->args_.stats) {
            self->RecordNode(id, start_wall, NowNanos() - start, *held_inputs, context->outputs());
          }
          std::vector<int> ready;
          if (self->FinishNode(item, context->status(), context.get(), &ready)) {
            if (self->stream_ != nullptr) {
              self->LaunchReady(ready);
            } else {
              self->ScheduleReady(ready, /*inline_queue=*/nullptr);
            }
          }
          self->NodeDone();
        });
  }

  // Checks the node's outputs and hands them to its consumers; collects nodes that became ready.
  // Returns false when the node failed.
  bool FinishNode(const NodeItem& item, const Status& status, OpKernelContext* context,
                  std::vector<int>* ready) {
    if (!CheckOutputs(item, status, context)) return false;
    std::vector<Tensor>& outputs = context->outputs();
    for (const internal::OutputTarget& target : item.targets) {
      if (target.dst_slot >= 0) {
        Tensor& value = outputs[target.src_output];
        inputs_[target.dst_slot] = target.last_use ? std::move(value) : value;
      }
      if (pending_[target.dst_node].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        ready->push_back(target.dst_node);
      }
    }
    return true;
  }

  // Fails the step unless the kernel succeeded and set every output.
  bool CheckOutputs(const NodeItem& item, const Status& status, OpKernelContext* context) {
    if (!status.ok() || !context->status().ok()) {
      Fail(AttributeToNode(status.ok() ? context->status() : status, *item.node));
      return false;
    }
    std::vector<Tensor>& outputs = context->outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].IsInitialized()) {
        Fail(Internal(FormatNodeForError(item.node->def()), ": kernel did not set output ", i));
        return false;
      }
    }
    return true;
  }

  std::unique_ptr<std::vector<Tensor>> TakeInputs(const NodeItem& item) {
    auto inputs = std::make_unique<std::vector<Tensor>>(item.num_inputs);
    for (int i = 0; i < item.num_inputs; ++i) {
      (*inputs)[i] = std::move(inputs_[item.input_start + i]);
    }
    return inputs;
  }

  OpKernelContext::Params ParamsFor(const NodeItem& item, std::vector<Tensor>* inputs) const {
    OpKernelContext::Params params;
    params.step_id = args_.step_id;
    params.kernel = item.kernel.get();
    params.device = const_cast<Device*>(&device_);
    params.inputs = inputs;
    params.call_frame = args_.call_frame;
    params.cancellation_manager = args_.cancellation_manager;
    params.rendezvous = args_.rendezvous;
    params.collective_executor = args_.collective_executor;
    return params;
  }

  // On a device with a stream, launching a node enqueues its kernel behind every kernel launched
  // before it. Its consumers on this device may launch at once (stream order runs them after it,
  // and each reads its inputs only then), so they are ready now. An asynchronous kernel (Send,
  // Recv, a collective) hands values beyond the stream, so its consumers wait until it is done.
  void Launch(int id, std::vector<int>* inline_queue) {
    const NodeItem& item = graph_.items[id];
    auto self = shared_from_this();
    if (item.is_async) {
      stream_->Enqueue([self, id] { self->RunAsyncOnStream(id); });
      return;
    }
    // Holds the step open until the consumers are counted: the kernel may finish first.
    outstanding_.fetch_add(1, std::memory_order_acq_rel);
    // Enqueued before any consumer can become ready, so before every consumer on the stream.
    stream_->Enqueue([self, id] { self->ComputeOnStream(id); });
    for (const internal::OutputTarget& target : item.targets) {
      if (pending_[target.dst_node].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        outstanding_.fetch_add(1, std::memory_order_acq_rel);
        inline_queue->push_back(target.dst_node);
      }
    }
    NodeDone();
  }

  // A launched synchronous kernel, run in stream order: its producers' kernels have run.
  void ComputeOnStream(int id) {
    const NodeItem& item = graph_.items[id];
    if (failed_.load(std::memory_order_acquire) || CheckCancelled()) {
      NodeDone();
      return;
    }
    auto inputs = TakeInputs(item);
    OpKernelContext context(ParamsFor(item, inputs.get()));
    int64_t start_wall = args_.stats ? StepStatsNowNanos() : 0;
    int64_t start = NowNanos();
    Status status = item.kernel->Compute(&context);
    if (args_.stats) RecordNode(id, start_wall, NowNanos() - start, *inputs, context.outputs());
    if (CheckOutputs(item, status, &context)) {
      std::vector<Tensor>& outputs = context.outputs();
      for (const internal::OutputTarget& target : item.targets) {
        if (target.dst_slot < 0) continue;
        Tensor& value = outputs[target.src_output];
        inputs_[target.dst_slot] = target.last_use ? std::move(value) : value;
      }
    }
    context.outputs().clear();
    inputs.reset();
    NodeDone();  // may end the step: touch nothing after it
  }

  // A launched asynchronous kernel starts in stream order, once its inputs are computed.
  void RunAsyncOnStream(int id) {
    const NodeItem& item = graph_.items[id];
    if (failed_.load(std::memory_order_acquire) || CheckCancelled()) {
      NodeDone();
      return;
    }
    auto inputs = TakeInputs(item);
    OpKernelContext::Params params = ParamsFor(item, inputs.get());
    RunAsyncNode(id, params, std::move(inputs));
  }

  // Launches nodes an asynchronous kernel made ready (each only enqueues, so no runner hop).
  void LaunchReady(const std::vector<int>& ready) {
    outstanding_.fetch_add(static_cast<int>(ready.size()), std::memory_order_acq_rel);
    for (int id : ready) Process(id);
  }

  // Expensive nodes but the last go to the runner; the rest join this thread's inline queue.
  void ScheduleReady(const std::vector<int>& ready, std::vector<int>* inline_queue) {
    // Count them before any can run and finish, so the step cannot end early.
    outstanding_.fetch_add(static_cast<int>(ready.size()), std::memory_order_acq_rel);
    int keep_expensive = -1;
    for (int id : ready) {
      const NodeItem& item = graph_.items[id];
      if (inline_queue != nullptr && item.RunsInline()) {
        inline_queue->push_back(id);
        continue;
      }
      if (keep_expensive >= 0) {
        auto self = shared_from_this();
        args_.runner([self, keep_expensive] { self->Process(keep_expensive); });
      }
      keep_expensive = id;
    }
    if (keep_expensive < 0) return;
    if (inline_queue != nullptr) {
      inline_queue->push_back(keep_expensive);
    } else {
      auto self = shared_from_this();
      args_.runner([self, keep_expensive] { self->Process(keep_expensive); });
    }
  }

  // Accounts for one finished (or skipped) node; the last one ends the step.
  void NodeDone() {
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish();
  }

  void Finish() {
    Status status;
    {
      MutexLock lock(mu_);
      status = status_;
    }
    // Every node's record happens-before the last NodeDone (acq_rel on outstanding_).
    if (args_.stats != nullptr) {
      records_.resize(static_cast<size_t>(num_records_.load(std::memory_order_acquire)));
      args_.stats->SaveDeferred(device_.name(), std::make_unique<internal::ExecutorStepStats>(
                                                    graph_.trace_info, std::move(records_)));
    }
    StatusCallback done = std::move(done_);
    done(status);
  }

  bool CheckCancelled() {
    if (!args_.cancellation_manager->IsCancelled()) return false;
    Fail(Cancelled("step ", args_.step_id, " was cancelled"));
    return true;
  }

  void Fail(const Status& status) {
    {
      MutexLock lock(mu_);
      if (!status_.ok()) return;
      status_ = status;
    }
    failed_.store(true, std::memory_order_release);
    args_.cancellation_manager->StartCancel();
  }

  void RecordNode(int id, int64_t start_wall_nanos, int64_t cost_nanos,
                  const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
    const int slot = num_records_.fetch_add(1, std::memory_order_relaxed);
    records_[slot] = internal::RecordNodeExec(id, (*graph_.trace_info)[id], start_wall_nanos,
                                              cost_nanos, inputs, outputs);
  }

  const ExecutorGraph& graph_;
  const Device& device_;
  const Executor::Args args_;
  StatusCallback done_;
  DeviceContext* const stream_;  // see StreamOf
  // Each slot written once by its producer, read once by its node (on a stream: in stream order).
  std::vector<Tensor> inputs_;
  std::unique_ptr<std::atomic<int>[]> pending_;
  std::atomic<int> outstanding_{0};
  std::atomic<bool> failed_{false};
  // Traced steps only: the nodes' records, in the order they finished.
  std::vector<internal::NodeExecRecord> records_;
  std::atomic<int> num_records_{0};
  Mutex mu_;
  Status status_ WEFT_GUARDED_BY(mu_);
};

class LocalExecutor final : public Executor {
 public:
  LocalExecutor(const ExecutorParams& params, std::unique_ptr<ExecutorGraph> graph)
      : params_(params), graph_(std::move(graph)) {}

  void RunAsync(const Args& args, StatusCallback done) const override {
    WEFT_CHECK(args.cancellation_manager != nullptr && args.runner);
    auto state = std::make_shared<StepState>(*graph_, *params_.device, args, std::move(done));
    state->Start();
  }

 private:
  const ExecutorParams params_;
  const std::unique_ptr<ExecutorGraph> graph_;
};

}  // namespace

StatusOr<std::unique_ptr<Executor>> Executor::Create(const ExecutorParams& params,
                                                     std::unique_ptr<const Graph> graph) {
  WEFT_CHECK(params.device != nullptr && params.kernels != nullptr);
  auto executor_graph = std::make_unique<ExecutorGraph>();
  executor_graph->items = std::vector<NodeItem>(graph->num_node_ids());
  auto trace_info = std::make_shared<std::vector<internal::NodeTraceInfo>>(graph->num_node_ids());
  std::vector<NodeItem>& items = executor_graph->items;
  int total_inputs = 0;
  for (Node* node : graph->nodes()) {
    NodeItem& item = items[node->id()];
    item.node = node;
    item.input_start = total_inputs;
    item.num_inputs = node->num_inputs();
    total_inputs += node->num_inputs();
    item.initial_pending = static_cast<int>(node->in_edges().size());
    WEFT_ASSIGN_OR_RETURN(item.kernel,
                          params.kernels->CreateKernel(node->def(), node->op_def(), params.device));
    item.is_async = item.kernel->AsAsync() != nullptr;
    item.declared_cheap = item.kernel->IsCheap();
    if (item.initial_pending == 0) executor_graph->roots.push_back(node->id());
    (*trace_info)[node->id()] = internal::TraceInfoOf(*node);
  }
  for (Node* node : graph->nodes()) {
    NodeItem& item = items[node->id()];
    std::vector<int> last_edge_of_output(node->num_outputs(), -1);
    for (const Edge* edge : node->out_edges()) {
      internal::OutputTarget target;
      target.dst_node = edge->dst->id();
      target.src_output = edge->src_output;
      if (!edge->IsControlEdge()) {
        target.dst_slot = items[edge->dst->id()].input_start + edge->dst_input;
        last_edge_of_output[edge->src_output] = static_cast<int>(item.targets.size());
      }
      item.targets.push_back(target);
    }
    for (int index : last_edge_of_output) {
      if (index >= 0) item.targets[index].last_use = true;
    }
  }
  executor_graph->total_inputs = total_inputs;
  executor_graph->trace_info = std::move(trace_info);
  executor_graph->graph = std::move(graph);
  return std::unique_ptr<Executor>(new LocalExecutor(params, std::move(executor_graph)));
}

Status Executor::Run(const Args& args) const {
  Notification finished;
  Status result;
  RunAsync(args, [&](const Status& status) {
    result = status;
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

}  // namespace weft
