// Executor: runs one graph (one partition, on one device) for a step. Dataflow: each node has a
// pending count of incoming edges; when it drops to zero the node is ready. Cheap ready nodes run
// inline on the current thread; of several expensive ready nodes, all but one go to the inter-op
// runner and the last continues inline, so chains never hop threads while independent branches
// run concurrently. Asynchronous kernels (Recv) complete through a callback without holding a
// thread. Each intermediate tensor is released as soon as its last consumer has run. The first
// error fails the step: it starts the step's cancellation (so waiting kernels wake), no further
// node starts, and RunAsync's callback gets that error once every running node has finished.
//
// On a device with a stream (DeviceContext::IsAsync) a node is launched, not run: its kernel is
// enqueued on the stream and its consumers launch at once behind it, reading their inputs when
// their own turn on the stream comes. Asynchronous kernels (Send, Recv, collectives) start in
// stream order, so what they hand beyond the device is computed; the step ends when the stream has
// run its last kernel. Synchronous devices take none of these paths.
//
// An Executor is immutable after Create and may run many steps concurrently.
#pragma once

#include <functional>
#include <memory>

#include "weft/framework/call_frame.h"
#include "weft/framework/cancellation.h"
#include "weft/framework/kernel_registry.h"
#include "weft/graph/graph.h"
#include "weft/runtime/device.h"
#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {

struct ExecutorParams {
  Device* device = nullptr;                 // not owned; outlives the executor
  const KernelRegistry* kernels = nullptr;  // not owned; outlives the executor
};

class Executor {
 public:
  using Runner = std::function<void(std::function<void()>)>;

  struct Args {
    int64_t step_id = 0;
    CallFrame* call_frame = nullptr;                      // feeds and fetches of the step
    CancellationManager* cancellation_manager = nullptr;  // required: the step's cancellation
    Runner runner;                                        // required: schedules on inter-op threads
    StepStatsCollector* stats = nullptr;                  // set to collect per-node timings
    Rendezvous* rendezvous = nullptr;                     // the step's, shared by its partitions
    CollectiveExecutor* collective_executor = nullptr;    // the step's, shared by its partitions
  };

  virtual ~Executor() = default;

  // Builds the kernel of every node of `graph` on `params.device`; errors name the node.
  static StatusOr<std::unique_ptr<Executor>> Create(const ExecutorParams& params,
                                                    std::unique_ptr<const Graph> graph);

  // Starts the step; `done` runs exactly once, on some thread, when the step ends. The calling
  // thread may run part of the step before RunAsync returns.
  virtual void RunAsync(const Args& args, StatusCallback done) const = 0;
  // Runs the step and waits for it.
  Status Run(const Args& args) const;
};

}  // namespace weft
