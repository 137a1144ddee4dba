#include "weft/distributed/master/worker_liveness.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "weft/core/str_util.h"

namespace weft {

struct WorkerLiveness::Probe {
  CallOptions options;
  proto::GetStatusRequest request;
  proto::GetStatusResponse response;
  std::chrono::steady_clock::time_point deadline;
  bool reported = false;  // guarded by WorkerLiveness::mu_
};

WorkerLiveness::WorkerLiveness(Options options)
    : options_(std::move(options)), interval_ms_(IntervalMs(options_.timeout_ms)) {}

WorkerLiveness::~WorkerLiveness() { Stop(); }

int64_t WorkerLiveness::IntervalMs(int64_t timeout_ms) {
  return std::clamp<int64_t>(timeout_ms / 4, 10, 5000);
}

std::shared_ptr<WorkerLiveness> WorkerLiveness::Start(Options options) {
  std::shared_ptr<WorkerLiveness> liveness(new WorkerLiveness(std::move(options)));
  liveness->ScheduleRound();
  return liveness;
}

void WorkerLiveness::ScheduleRound() {
  std::weak_ptr<WorkerLiveness> weak = weak_from_this();
  MutexLock lock(mu_);
  if (stopped_) return;
  timer_id_ = options_.timer->Schedule(interval_ms_, [weak] {
    if (std::shared_ptr<WorkerLiveness> self = weak.lock()) self->Round();
  });
}

void WorkerLiveness::Round() {
  // Outside the lock: it asks the session, which may be calling Stop().
  const bool active = options_.active == nullptr || options_.active();
  const int64_t probe_timeout_ms = options_.timeout_ms - interval_ms_;
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, std::shared_ptr<Probe>>> started;
  std::vector<std::pair<std::string, std::shared_ptr<Probe>>> overdue;
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    for (const auto& [task, probe] : in_flight_) {
      if (!probe->reported && now >= probe->deadline) {
        probe->reported = true;
        overdue.emplace_back(task, probe);
      }
    }
    if (active) {
      for (const std::string& task : options_.tasks) {
        if (in_flight_.count(task) != 0) continue;
        auto probe = std::make_shared<Probe>();
        probe->options.set_timeout_ms(probe_timeout_ms);
        probe->deadline = now + std::chrono::milliseconds(probe_timeout_ms);
        in_flight_[task] = probe;
        started.emplace_back(task, std::move(probe));
      }
    }
    if (!overdue.empty()) ++reporting_;
  }
  if (!overdue.empty()) {
    for (const auto& [task, probe] : overdue) {
      probe->options.StartCancel();
      if (options_.on_failure) {
        options_.on_failure(task,
                            DeadlineExceeded("GetStatus to ", task, " at ",
                                             options_.worker_cache->TaskAddress(task),
                                             " got no answer within ", probe_timeout_ms, " ms"));
      }
    }
    MutexLock lock(mu_);
    --reporting_;
    probes_done_.NotifyAll();
  }
  for (const auto& entry : started) {
    const std::string& task = entry.first;
    Probe* call = entry.second.get();
    auto done = [self = shared_from_this(), task, probe = entry.second](const Status& status) {
      self->OnProbeDone(task, probe, status);
    };
    WorkerInterface* worker = options_.worker_cache->GetOrCreateWorker(task);
    if (worker == nullptr) {
      done(NotFound("the worker cache knows no task ", task));
      continue;
    }
    worker->GetStatusAsync(&call->options, &call->request, &call->response, std::move(done));
  }
  ScheduleRound();
}

void WorkerLiveness::OnProbeDone(const std::string& task, const std::shared_ptr<Probe>& probe,
                                 const Status& status) {
  bool report = false;
  {
    MutexLock lock(mu_);
    report = !stopped_ && !probe->reported && (IsDeadlineExceeded(status) || IsUnavailable(status));
    probe->reported = probe->reported || report;
  }
  // Before the probe leaves in_flight_, so that Stop() also waits for the report.
  if (report && options_.on_failure) options_.on_failure(task, status);
  MutexLock lock(mu_);
  in_flight_.erase(task);
  probes_done_.NotifyAll();
}

void WorkerLiveness::Stop() {
  std::vector<std::shared_ptr<Probe>> probes;
  {
    MutexLock lock(mu_);
    if (!stopped_) {
      stopped_ = true;
      if (timer_id_ != 0) options_.timer->Cancel(timer_id_);
    }
    for (const auto& entry : in_flight_) probes.push_back(entry.second);
  }
  for (const std::shared_ptr<Probe>& probe : probes) probe->options.StartCancel();
  MutexLock lock(mu_);
  while (!in_flight_.empty() || reporting_ > 0) probes_done_.Wait(lock);
}

}  // namespace weft
