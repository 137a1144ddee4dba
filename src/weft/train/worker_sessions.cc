// WorkerSessions (see the header).
#include "weft/train/worker_sessions.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <utility>

#include "weft/core/logging.h"
#include "weft/core/str_util.h"

namespace weft::train {
namespace {

using Clock = std::chrono::steady_clock;

// How often a lost worker's server is asked again: often enough that it rejoins within a second of
// answering, rarely enough that a long outage costs nothing.
constexpr std::chrono::milliseconds kRetryInterval{250};
// How long one probe waits for the worker: a session made while it is absent would wait the whole
// worker timeout (30 s by default), holding up a model that is done with training.
constexpr int64_t kProbeTimeoutMs = 1000;

// The worker is not (yet) there: its server is down, restarting, or forgot the session.
bool WorkerAbsent(const Status& status) {
  return IsUnavailable(status) || IsAborted(status) || IsDeadlineExceeded(status) ||
         IsNotFound(status);
}

}  // namespace

// Runs each call in the first worker session that answers, starting from the last that did.
class AnyWorkerSession final : public Session {
 public:
  explicit AnyWorkerSession(WorkerSessions* workers) : workers_(workers) {}

  // The workers' sessions got the first graph when they were made.
  Status Create(const proto::GraphDef& /*graph*/) override {
    return AlreadyExists("the workers' sessions already have their graph");
  }
  Status Extend(const proto::GraphDef& graph) override { return workers_->Extend(graph); }
  Status Run(const NamedTensorList& inputs, const std::vector<std::string>& output_names,
             const std::vector<std::string>& target_names, std::vector<Tensor>* outputs) override {
    return InAnyWorker(
        [&](Session& session) { return session.Run(inputs, output_names, target_names, outputs); });
  }
  Status Run(const proto::RunOptions& run_options, const NamedTensorList& inputs,
             const std::vector<std::string>& output_names,
             const std::vector<std::string>& target_names, std::vector<Tensor>* outputs,
             proto::RunMetadata* run_metadata) override {
    return InAnyWorker([&](Session& session) {
      return session.Run(run_options, inputs, output_names, target_names, outputs, run_metadata);
    });
  }
  Status ListDevices(std::vector<proto::DeviceAttributes>* devices) override {
    return InAnyWorker([&](Session& session) { return session.ListDevices(devices); });
  }
  // The workers' sessions close with the WorkerSessions.
  Status Close() override { return Status::OK(); }

 private:
  Status InAnyWorker(const std::function<Status(Session&)>& call) {
    Status status;
    for (int tried = 0; tried < workers_->size(); ++tried) {
      const int worker = (preferred_.load() + tried) % workers_->size();
      status = call(*workers_->session(worker));
      if (!WorkerAbsent(status)) {
        preferred_.store(worker);
        return status;
      }
    }
    return status;
  }

  WorkerSessions* const workers_;
  std::atomic<int> preferred_{0};
};

std::unique_ptr<Session> WorkerSessions::NewAnyWorkerSession() {
  return std::make_unique<AnyWorkerSession>(this);
}

StatusOr<std::unique_ptr<WorkerSessions>> WorkerSessions::Create(
    std::vector<SessionOptions> options, std::vector<std::string> names,
    const proto::GraphDef& graph, RestoreTasksFn restore_tasks) {
  if (names.size() != options.size()) {
    return Internal(names.size(), " worker names for ", options.size(), " worker sessions");
  }
  std::unique_ptr<WorkerSessions> sessions(
      new WorkerSessions(std::move(options), std::move(names), std::move(restore_tasks)));
  {
    MutexLock lock(sessions->mu_);
    sessions->deltas_.push_back(graph);
  }
  std::vector<std::shared_ptr<Session>> made;
  for (int w = 0; w < sessions->size(); ++w) {
    StatusOr<std::shared_ptr<Session>> session = sessions->NewWorkerSession(w);
    if (!session.ok()) return session.status();
    std::vector<proto::DeviceAttributes> devices;
    Status listed = (*session)->ListDevices(&devices);
    if (!listed.ok())
      return listed.WithContext(StrCat("the devices of worker ", sessions->name(w)));
    sessions->Remember(devices);
    made.push_back(std::move(session).value());
  }
  MutexLock lock(sessions->mu_);
  sessions->sessions_ = std::move(made);
  return sessions;
}

void WorkerSessions::StopRecoveries() {
  MutexLock lock(mu_);
  stopping_ = true;
  stop_.NotifyAll();
}

WorkerSessions::~WorkerSessions() {
  std::vector<std::shared_ptr<Session>> sessions;
  {
    MutexLock lock(mu_);
    sessions.swap(sessions_);
  }
  for (const std::shared_ptr<Session>& session : sessions) session->Close().IgnoreError();
  std::shared_ptr<Session> ps_session;
  {
    MutexLock lock(mu_);
    ps_session.swap(ps_session_);
  }
  if (ps_session != nullptr) ps_session->Close().IgnoreError();
}

std::shared_ptr<Session> WorkerSessions::session(int worker) const {
  MutexLock lock(mu_);
  return sessions_[static_cast<size_t>(worker)];
}

StatusOr<std::shared_ptr<Session>> WorkerSessions::NewWorkerSession(int worker) {
  return NewSessionWithGraph(options_[static_cast<size_t>(worker)],
                             StrCat("the session of worker ", name(worker)));
}

StatusOr<std::shared_ptr<Session>> WorkerSessions::PsSession() {
  {
    MutexLock lock(mu_);
    if (ps_session_ != nullptr) return ps_session_;
  }
  SessionOptions options = options_.front();
  auto* filters = options.config.mutable_device_filters();
  filters->erase(
      std::remove_if(filters->begin(), filters->end(),
                     [](const std::string& filter) { return !filter.starts_with("/job:ps"); }),
      filters->end());
  return NewSessionWithGraph(options, "the session of the ps tasks", &ps_session_);
}

void WorkerSessions::ResetPsSession(const std::shared_ptr<Session>& broken) {
  std::shared_ptr<Session> old;
  {
    MutexLock lock(mu_);
    if (ps_session_ != broken) return;
    old = std::move(ps_session_);
  }
  old->Close().IgnoreError();
}

StatusOr<std::shared_ptr<Session>> WorkerSessions::NewSessionWithGraph(
    const SessionOptions& options, const std::string& context, std::shared_ptr<Session>* install) {
  StatusOr<std::unique_ptr<Session>> made = NewSession(options);
  if (!made.ok()) return made.status().WithContext(context);
  std::shared_ptr<Session> session = std::move(made).value();
  // Created outside the lock (it waits on the cluster); deltas sent meanwhile are sent after.
  size_t sent = 0;
  while (true) {
    std::vector<proto::GraphDef> missing;
    {
      MutexLock lock(mu_);
      if (sent == deltas_.size()) {
        if (install == nullptr) return session;
        // Another thread may have made one meanwhile: the first stays.
        if (*install == nullptr) {
          *install = session;
          return session;
        }
        std::shared_ptr<Session> first = *install;
        session->Close().IgnoreError();
        return first;
      }
      missing.assign(deltas_.begin() + static_cast<std::ptrdiff_t>(sent), deltas_.end());
    }
    for (const proto::GraphDef& delta : missing) {
      Status status = sent == 0 ? session->Create(delta) : session->Extend(delta);
      if (!status.ok()) return status.WithContext(context);
      ++sent;
    }
  }
}

StatusOr<std::vector<proto::DeviceAttributes>> WorkerSessions::Probe(int worker) const {
  SessionOptions probe = options_[static_cast<size_t>(worker)];
  probe.config.set_worker_timeout_in_ms(kProbeTimeoutMs);
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(probe));
  std::vector<proto::DeviceAttributes> devices;
  Status answered = session->Create(proto::GraphDef());
  if (answered.ok()) answered = session->ListDevices(&devices);
  session->Close().IgnoreError();
  WEFT_RETURN_IF_ERROR(answered);
  return devices;
}

void WorkerSessions::Remember(const std::vector<proto::DeviceAttributes>& devices) {
  MutexLock lock(mu_);
  for (const proto::DeviceAttributes& device : devices) {
    incarnations_[device.name()] = device.incarnation();
  }
}

std::vector<std::string> WorkerSessions::RestartedTasks(
    int worker, const std::vector<proto::DeviceAttributes>& devices) const {
  const std::string own = name(worker) + "/";
  std::set<std::string> tasks;
  MutexLock lock(mu_);
  for (const proto::DeviceAttributes& device : devices) {
    if (device.name().starts_with(own)) continue;  // the worker's own restart loses nothing
    auto known = incarnations_.find(device.name());
    if (known != incarnations_.end() && known->second != device.incarnation()) {
      tasks.insert(device.name().substr(0, device.name().find("/device:")));
    }
  }
  return {tasks.begin(), tasks.end()};
}

Status WorkerSessions::RestoreRestarted(int worker, Session& session,
                                        const std::vector<proto::DeviceAttributes>& devices) {
  MutexLock restoring(restore_mu_);
  // Another worker's recovery may have restored them while this one waited.
  const std::vector<std::string> tasks = RestartedTasks(worker, devices);
  if (!tasks.empty()) {
    if (!restore_tasks_) {
      return FailedPrecondition(StrJoin(tasks, ", "),
                                " restarted and lost its state, and nothing restores it");
    }
    WEFT_RETURN_IF_ERROR(restore_tasks_(session, tasks));
  }
  Remember(devices);
  return Status::OK();
}

Status WorkerSessions::Extend(const proto::GraphDef& delta) {
  std::vector<std::shared_ptr<Session>> sessions;
  {
    MutexLock lock(mu_);
    deltas_.push_back(delta);
    sessions = sessions_;
    if (ps_session_ != nullptr) sessions.push_back(ps_session_);
  }
  for (int w = 0; w < static_cast<int>(sessions.size()); ++w) {
    Status status = sessions[static_cast<size_t>(w)]->Extend(delta);
    if (!status.ok()) {
      return status.WithContext(w < size() ? StrCat("the session of worker ", name(w))
                                           : std::string("the session of the ps tasks"));
    }
  }
  return Status::OK();
}

Status WorkerSessions::Recover(int worker, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  WEFT_LOG(WARNING) << "worker " << name(worker)
                    << " was lost; its session is re-created once it answers (waiting up to "
                    << timeout.count() << " ms)";
  bool reported = false;
  while (true) {
    {
      MutexLock lock(mu_);
      if (stopping_) return Cancelled("the model stopped waiting for worker ", name(worker));
    }
    StatusOr<std::vector<proto::DeviceAttributes>> devices = Probe(worker);
    StatusOr<std::shared_ptr<Session>> session =
        devices.ok() ? NewWorkerSession(worker)
                     : StatusOr<std::shared_ptr<Session>>(devices.status());
    if (session.ok()) {
      // Before the session takes a step: the tasks it uses that restarted get their state back.
      WEFT_RETURN_IF_ERROR(RestoreRestarted(worker, **session, *devices));
      std::shared_ptr<Session> old;
      {
        MutexLock lock(mu_);
        old = std::move(sessions_[static_cast<size_t>(worker)]);
        sessions_[static_cast<size_t>(worker)] = std::move(session).value();
        ++recoveries_;
      }
      // The old session's worker sessions died with the server; closing it frees the master's.
      old->Close().IgnoreError();
      WEFT_LOG(WARNING) << "worker " << name(worker) << " is back: it takes steps again";
      return Status::OK();
    }
    if (!WorkerAbsent(session.status())) return session.status();
    if (!reported) {
      // Names what is missing (the worker, or a ps task its session needs) within a second.
      WEFT_LOG(WARNING) << "worker " << name(worker)
                        << " cannot run steps yet: " << session.status();
      reported = true;
    }
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      return Unavailable("worker ", name(worker), " did not come back within ", timeout.count(),
                         " ms: ", session.status().message());
    }
    MutexLock lock(mu_);
    const Clock::time_point retry = std::min<Clock::time_point>(now + kRetryInterval, deadline);
    while (!stopping_ && Clock::now() < retry) stop_.WaitUntil(lock, retry);
    if (stopping_) return Cancelled("the model stopped waiting for worker ", name(worker));
  }
}

int64_t WorkerSessions::recoveries() const {
  MutexLock lock(mu_);
  return recoveries_;
}

}  // namespace weft::train
