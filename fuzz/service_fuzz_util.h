// What the WorkerService and MasterService fuzzers share: the in-process task they serve from, the
// call-sequence format of their inputs, and calls with a short deadline. Fuzz-only code.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_util.h"

#include "weft/core/logging.h"
#include "weft/core/notification.h"
#include "weft/core/thread_pool.h"
#include "weft/distributed/call_options.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/worker/local_worker_cache.h"
#include "weft/distributed/worker/worker.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/device_mgr.h"

namespace weft::fuzz {

// The task is one worker, "/job:worker/replica:0/task:0", with two CPU devices and a compute pool,
// made once per process; each input gets a fresh Worker (and Master) over it. Each target runs one
// input at a time.
//
// Input format: up to kMaxCalls records of {uint8 method, uint16 little-endian length, that many
// bytes of the method's request proto}; a record whose bytes do not parse is skipped.

inline constexpr char kTask[] = "/job:worker/replica:0/task:0";
inline constexpr int kMaxCalls = 8;
// How long a call may wait (on a step, a peer or a collective group) before it is cancelled: long
// enough for a small step, short enough that an input of kMaxCalls blocking calls stays quick.
inline constexpr auto kCallDeadline = std::chrono::milliseconds(50);
// How long a cancelled call may take to answer; beyond it the call is reported as hung.
inline constexpr auto kCancelledCallLimit = std::chrono::seconds(10);

// The process-wide parts of the task; what a Server (distributed/server.h) would own.
struct TaskResources {
  std::unique_ptr<DeviceMgr> devices;
  std::unique_ptr<ThreadPool> compute_pool;

  static TaskResources& Get() {
    static TaskResources* resources = [] {
      auto* made = new TaskResources();
      proto::ConfigProto config;
      (*config.mutable_device_count())["CPU"] = 2;
      made->devices = CreateLocalDevices(config, /*intra_op_threads=*/2, "worker", 0).value();
      made->compute_pool = std::make_unique<ThreadPool>("fuzz_compute", 2);
      return made;
    }();
    return *resources;
  }
};

// A worker cache of the tasks of `cluster` that live in this process: only kTask, served by
// `worker`. The fuzzers open no connections, so the other tasks of a session's cluster_def are
// unknown to it (a call to them fails at once, as to a task that cannot be reached).
inline std::unique_ptr<WorkerCacheInterface> InProcessCache(const ClusterSpec& cluster,
                                                            WorkerInterface* worker) {
  std::map<std::string, WorkerInterface*> workers;
  if (cluster.NumTasks("worker") > 0) workers[kTask] = worker;
  return NewLocalWorkerCache(std::move(workers));
}

// A fresh in-process Worker for kTask over the shared TaskResources.
struct FuzzWorker {
  WorkerEnv env;
  std::unique_ptr<Worker> worker;
  std::unique_ptr<WorkerCacheInterface> cache;

  FuzzWorker() {
    TaskResources& resources = TaskResources::Get();
    env.task_name = kTask;
    env.devices = resources.devices.get();
    env.op_registry = &ops::AllOps();
    env.kernel_registry = &kernels::AllKernels();
    env.compute_pool = resources.compute_pool.get();
    env.worker_cache_factory =
        [this](const ClusterSpec& cluster) -> StatusOr<std::unique_ptr<WorkerCacheInterface>> {
      return InProcessCache(cluster, worker.get());
    };
    worker = std::make_unique<Worker>(&env);
    cache = NewLocalWorkerCache({{kTask, worker.get()}});
    env.worker_cache = cache.get();
  }
  // The worker goes first: it aborts and waits for its steps, which use the cache.
  ~FuzzWorker() { worker.reset(); }
};

// With WEFT_FUZZ_VERBOSE set, prints each call and its outcome: what a finding's input does, and
// whether a seed gets as far as it should.
inline void TraceCall(std::string_view method, const Status& status) {
  static const bool verbose = std::getenv("WEFT_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(method.size()), method.data(),
                 status.ToString().c_str());
}

// Calls `run_call(method byte, request bytes)` for each record of the call sequence in the input,
// at most kMaxCalls.
template <typename RunCall>
void ForEachCall(const uint8_t* data, size_t size, const RunCall& run_call) {
  InputReader input(data, size);
  for (int i = 0; i < kMaxCalls && !input.empty(); ++i) {
    const uint8_t method = input.TakeByte();
    const std::string_view request = input.TakeBytes(input.TakeU16());
    run_call(method, request);
  }
}

// Starts an asynchronous call with `options` and waits for its `done`; past kCallDeadline the call
// is cancelled, and it must then answer within kCancelledCallLimit.
inline Status CallWithDeadline(
    const std::function<void(CallOptions* options, StatusCallback done)>& start) {
  CallOptions options;
  Notification finished;
  Status status;
  start(&options, [&finished, &status](const Status& s) {
    status = s;
    finished.Notify();
  });
  if (!finished.WaitForNotificationWithTimeout(kCallDeadline)) {
    options.StartCancel();
    WEFT_CHECK(finished.WaitForNotificationWithTimeout(kCancelledCallLimit))
        << "a call did not answer within " << kCancelledCallLimit.count()
        << " s of being cancelled";
  }
  return status;
}

}  // namespace weft::fuzz
