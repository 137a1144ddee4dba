#include "weft/distributed/master/master.h"

#include <iomanip>
#include <random>
#include <sstream>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
#include "weft/core/timer.h"
#include "weft/distributed/master/master_devices.h"
#include "weft/distributed/master/master_session.h"
#include "weft/distributed/worker/step_metrics.h"

namespace weft {

Master::Master(MasterEnv* env) : env_(env), timer_(std::make_unique<Timer>()) {}

Master::~Master() {
  {
    MutexLock lock(mu_);
    while (scheduled_ != 0) idle_.Wait(lock);
  }
  CloseAllSessions();
}

void Master::Schedule(std::function<void()> fn) {
  {
    MutexLock lock(mu_);
    ++scheduled_;
  }
  auto run = [this, fn = std::move(fn)] {
    fn();
    MutexLock lock(mu_);
    if (--scheduled_ == 0) idle_.NotifyAll();
  };
  if (env_->pool != nullptr) {
    env_->pool->Schedule(std::move(run));
  } else {
    run();
  }
}

StatusOr<std::shared_ptr<MasterSession>> Master::FindSession(const std::string& handle) {
  MutexLock lock(mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    return Aborted("session '", handle, "' is not found; possibly this master restarted");
  }
  return it->second;
}

std::string Master::NewSessionHandle() {
  static Mutex mu;
  static std::mt19937_64 generator{std::random_device{}()};
  uint64_t value;
  {
    MutexLock lock(mu);
    value = generator();
  }
  std::ostringstream out;
  out << std::hex << std::setw(16) << std::setfill('0') << value;
  return out.str();
}

void Master::CreateSessionAsync(const proto::CreateSessionRequest* request,
                                proto::CreateSessionResponse* response, StatusCallback done) {
  Schedule([this, request, response, done = std::move(done)] {
    MasterSession::Options options;
    options.handle = NewSessionHandle();
    options.config = request->config();
    options.local_task = env_->local_task;
    options.op_registry = env_->op_registry;
    options.kernel_registry = env_->kernel_registry;
    options.timer = timer_.get();
    options.worker_timeout_ms = request->config().worker_timeout_in_ms() > 0
                                    ? request->config().worker_timeout_in_ms()
                                    : env_->worker_timeout_ms;
    options.worker_cache = env_->worker_cache;
    if (!request->config().cluster_def().job().empty()) {
      StatusOr<ClusterSpec> cluster = ClusterSpec::FromProto(request->config().cluster_def());
      if (!cluster.ok()) return done(cluster.status().WithContext("the session's cluster_def"));
      if (!env_->worker_cache_factory) {
        return done(InvalidArgument(
            "the session's config carries a cluster_def, but this master cannot build a worker "
            "cache for it"));
      }
      auto cache = env_->worker_cache_factory(*cluster);
      if (!cache.ok()) return done(cache.status().WithContext("the session's cluster_def"));
      options.owned_cache = std::move(cache).value();
      options.worker_cache = options.owned_cache.get();
    }
    if (options.worker_cache == nullptr) {
      return done(FailedPrecondition("this master has no cluster to create a session on"));
    }
    std::string handle = options.handle;
    auto session = MasterSession::Create(std::move(options), request->graph_def());
    if (!session.ok()) return done(session.status());
    {
      MutexLock lock(mu_);
      sessions_[handle] = *session;
    }
    response->set_session_handle(handle);
    response->set_graph_version(0);
    done(Status::OK());
  });
}

void Master::ExtendSessionAsync(const proto::ExtendSessionRequest* request,
                                proto::ExtendSessionResponse* response, StatusCallback done) {
  auto session = FindSession(request->session_handle());
  if (!session.ok()) return done(session.status());
  Schedule([session = *session, request, response, done = std::move(done)] {
    done(session->Extend(*request, response));
  });
}

void Master::RunStepAsync(CallOptions* options, const proto::RunStepRequest* request,
                          proto::RunStepResponse* response, StatusCallback done) {
  done = CountedStep("master", std::move(done));
  auto session = FindSession(request->session_handle());
  if (!session.ok()) return done(session.status());
  // A known signature runs on the caller's thread: no blocking set-up, and no thread hop per step.
  (*session)->RunAsync(
      options, request, response, [this](std::function<void()> fn) { Schedule(std::move(fn)); },
      std::move(done));
}

void Master::CloseSessionAsync(const proto::CloseSessionRequest* request,
                               proto::CloseSessionResponse* /*response*/, StatusCallback done) {
  std::shared_ptr<MasterSession> session;
  {
    MutexLock lock(mu_);
    auto it = sessions_.find(request->session_handle());
    if (it != sessions_.end()) {
      session = std::move(it->second);
      sessions_.erase(it);
    }
  }
  if (session == nullptr) {
    return done(Aborted("session '", request->session_handle(),
                        "' is not found; possibly this master restarted"));
  }
  Schedule([session = std::move(session), done = std::move(done)] { done(session->Close()); });
}

void Master::ListDevicesAsync(const proto::ListDevicesRequest* request,
                              proto::ListDevicesResponse* response, StatusCallback done) {
  auto fill = [response](const std::vector<proto::DeviceAttributes>& devices,
                         const std::string& local_task) {
    for (const auto& device : devices) {
      StatusOr<std::string> task = ParseTaskOfDevice(device.name());
      bool local = task.ok() && *task == local_task;
      *(local ? response->add_local_device() : response->add_remote_device()) = device;
    }
  };
  if (!request->session_handle().empty()) {
    auto session = FindSession(request->session_handle());
    if (!session.ok()) return done(session.status());
    fill((*session)->devices(), env_->local_task);
    return done(Status::OK());
  }
  Schedule([this, fill, done = std::move(done)] {
    if (env_->worker_cache == nullptr) {
      return done(FailedPrecondition("this master has no cluster to list the devices of"));
    }
    StatusOr<std::vector<std::string>> tasks =
        SessionTasks(env_->worker_cache->ListWorkers(), env_->local_task, {});
    if (!tasks.ok()) return done(tasks.status());
    auto devices = DiscoverDevices(env_->worker_cache, *tasks, env_->worker_timeout_ms);
    if (!devices.ok()) return done(devices.status());
    fill(*devices, env_->local_task);
    done(Status::OK());
  });
}

void Master::ResetAsync(const proto::ResetRequest* /*request*/, proto::ResetResponse* /*response*/,
                        StatusCallback done) {
  Schedule([this, done = std::move(done)] {
    CloseAllSessions();
    done(Status::OK());
  });
}

void Master::CloseAllSessions() {
  std::map<std::string, std::shared_ptr<MasterSession>> sessions;
  {
    MutexLock lock(mu_);
    sessions.swap(sessions_);
  }
  for (auto& [handle, session] : sessions) session->Close().IgnoreError();
}

}  // namespace weft
