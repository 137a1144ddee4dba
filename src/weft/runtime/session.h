// Session: how a client runs a graph. Create() hands it a GraphDef, Extend() adds nodes, Run()
// feeds tensors by name, computes the fetched tensors and runs the target nodes for their effects.
// NewSession picks the implementation from SessionOptions::target: "" runs in this process
// (DirectSession); other schemes ("grpc://...") come from factories registered at start-up.
// A callable (the reference's MakeCallable) names the feeds, fetches and targets once, so that a
// step run many times (a coordinator's scheduled functions) skips the per-call signature lookup.
// Every Session is safe to Run from many threads at once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "weft/config.pb.h"
#include "weft/core/mutex.h"
#include "weft/core/tensor.h"
#include "weft/device_attributes.pb.h"
#include "weft/framework/kernel_registry.h"
#include "weft/framework/op_registry.h"
#include "weft/graph.pb.h"

namespace weft {

class CollectiveExecutorMgrInterface;
class DeviceFactoryRegistry;

using NamedTensorList = std::vector<std::pair<std::string, Tensor>>;

// What a callable runs: feed these tensors (in this order), fetch these, run these targets.
struct CallableOptions {
  std::vector<std::string> feeds{};
  std::vector<std::string> fetches{};
  std::vector<std::string> targets{};
  proto::RunOptions run_options{};  // for every call (deadline, tracing)
};
using CallableHandle = int64_t;

struct SessionOptions {
  // "" for an in-process session; "grpc://host:port" for a cluster (when its factory is linked).
  std::string target;
  proto::ConfigProto config;
  // Registries to build graphs, kernels and devices from; null means every op, kernel and device
  // type of Weft. They must outlive the session.
  const OpRegistry* op_registry = nullptr;
  const KernelRegistry* kernel_registry = nullptr;
  const DeviceFactoryRegistry* device_factories = nullptr;
  // Each step's collectives; null means a LocalCollectiveExecutor per step. Must outlive the
  // session.
  CollectiveExecutorMgrInterface* collective_executor_mgr = nullptr;
};

class Session {
 public:
  virtual ~Session() = default;

  // Sets the session's graph; AlreadyExists when one was already created.
  virtual Status Create(const proto::GraphDef& graph) = 0;
  // Adds nodes to the graph; they may read existing nodes. All-or-nothing.
  virtual Status Extend(const proto::GraphDef& graph) = 0;

  // Feeds `inputs` (tensor name -> value), returns the tensors named by `output_names` in that
  // order in `outputs`, and runs `target_names` for their effects.
  virtual Status Run(const NamedTensorList& inputs, const std::vector<std::string>& output_names,
                     const std::vector<std::string>& target_names,
                     std::vector<Tensor>* outputs) = 0;
  // As above, with per-call options (deadline, tracing) and metadata back (step stats).
  virtual Status Run(const proto::RunOptions& run_options, const NamedTensorList& inputs,
                     const std::vector<std::string>& output_names,
                     const std::vector<std::string>& target_names, std::vector<Tensor>* outputs,
                     proto::RunMetadata* run_metadata) = 0;

  // Prepares `options` once; the handle serves RunCallable until ReleaseCallable. The default
  // implementation remembers the names and calls Run; DirectSession prepares the step itself.
  virtual StatusOr<CallableHandle> MakeCallable(const CallableOptions& options)
      WEFT_EXCLUDES(callables_mu_);
  // Runs the callable with `feeds` in the order of its options' feeds; InvalidArgument for an
  // unknown handle or the wrong number of feeds (naming what was expected).
  virtual Status RunCallable(CallableHandle handle, const std::vector<Tensor>& feeds,
                             std::vector<Tensor>* fetches, proto::RunMetadata* run_metadata)
      WEFT_EXCLUDES(callables_mu_);
  virtual Status ReleaseCallable(CallableHandle handle) WEFT_EXCLUDES(callables_mu_);

  // The devices the session can place nodes on: this process's, or every task's of a cluster.
  virtual Status ListDevices(std::vector<proto::DeviceAttributes>* devices) = 0;

  // Releases the session's resources; later calls fail with FailedPrecondition.
  virtual Status Close() = 0;

 protected:
  // The options of a live handle, or InvalidArgument naming it.
  StatusOr<CallableOptions> FindCallable(CallableHandle handle) const WEFT_EXCLUDES(callables_mu_);
  // Checks that `feeds` fits `options` (one tensor per feed).
  static Status CheckCallableFeeds(CallableHandle handle, const CallableOptions& options,
                                   const std::vector<Tensor>& feeds);

 private:
  mutable Mutex callables_mu_;
  std::map<CallableHandle, CallableOptions> callables_ WEFT_GUARDED_BY(callables_mu_);
  CallableHandle next_callable_ WEFT_GUARDED_BY(callables_mu_) = 1;
};

using SessionFactory =
    std::function<StatusOr<std::unique_ptr<Session>>(const SessionOptions& options)>;

// Makes `factory` serve targets starting with `scheme` (for example "grpc://"). Call at start-up,
// before NewSession; thread-safe.
void RegisterSessionFactory(const std::string& scheme, SessionFactory factory);

// A new session for `options.target`; InvalidArgument naming the target when no factory serves it.
StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options);

}  // namespace weft
