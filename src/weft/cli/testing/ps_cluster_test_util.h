// A fixture for parameter-server tests that kill and restart servers: two `weft server` workers
// and two ps tasks on loopback (ephemeral ports, torn down by their ServerProcess), this process
// the coordinator of a ParameterServerStrategy over them. RestartWorker kills a worker (SIGKILL)
// and starts it again on its address, as `weft launch --restart-failed` would; KillWorkers does so
// from a Fit's callback. For tests only;
// WEFT_BINARY names the `weft` binary.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/distribute/parameter_server_strategy.h"
#include "weft/distributed/rpc/grpc_server.h"
#include "weft/distributed/rpc/grpc_session.h"
#include "weft/testing/server_process.h"
#include "weft/train/callbacks.h"
#include "weft/train/model.h"

namespace weft::cli::testing {

using weft::testing::ServerProcess;

// The flags of `weft server` task `task` of `job`, whose tasks serve `addresses` (comma-separated).
inline std::vector<std::string> PsServerFlags(const std::string& job, const std::string& addresses,
                                              int task) {
  return {"--cluster",
          job + "=" + addresses,
          "--job",
          job,
          "--task",
          std::to_string(task),
          "--intra-op-threads",
          "1",
          "--inter-op-threads",
          "2"};
}

inline std::vector<std::string> ServerAddresses(
    const std::vector<std::unique_ptr<ServerProcess>>& servers) {
  std::vector<std::string> addresses;
  for (const auto& server : servers) addresses.push_back(server->address());
  return addresses;
}

// Kills `worker` (SIGKILL, reaped) and starts it again on its address: its sessions, graphs and
// per-worker state are gone.
inline Status RestartWorker(std::vector<std::unique_ptr<ServerProcess>>& workers, int worker) {
  const std::string addresses = StrJoin(ServerAddresses(workers), ",");
  workers[static_cast<size_t>(worker)].reset();
  WEFT_ASSIGN_OR_RETURN(
      workers[static_cast<size_t>(worker)],
      ServerProcess::Start(WEFT_BINARY, PsServerFlags("worker", addresses, worker)));
  return Status::OK();
}

// Kills worker (kill % 2) when training reaches each of `at_steps` and starts it again on its
// address at once (SIGKILL, then a new server: its sessions and graphs are gone, so its running
// steps fail and the coordinator recovers it).
class KillWorkers final : public train::Callback {
 public:
  KillWorkers(std::vector<std::unique_ptr<ServerProcess>>& workers, std::vector<int64_t> at_steps)
      : workers_(workers), at_steps_(std::move(at_steps)) {}

  Status OnTrainBatchEnd(train::Model& /*model*/, const train::Logs& logs) override {
    const auto step = static_cast<int64_t>(logs.at("step"));
    if (kills_ >= static_cast<int>(at_steps_.size()) || step < at_steps_[kills_]) {
      return Status::OK();
    }
    const int worker = kills_++ % static_cast<int>(workers_.size());
    return RestartWorker(workers_, worker);
  }

  int kills() const { return kills_; }

 private:
  std::vector<std::unique_ptr<ServerProcess>>& workers_;
  const std::vector<int64_t> at_steps_;
  int kills_ = 0;
};

class PsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterGrpcServerFactory();
    RegisterGrpcSessionFactory();
    for (const char* job : {"worker", "ps"}) {
      auto& servers = std::string(job) == "worker" ? workers_ : ps_;
      for (int i = 0; i < 2; ++i) {
        auto server =
            ServerProcess::Start(WEFT_BINARY, PsServerFlags(job, "127.0.0.1:0,127.0.0.1:0", i));
        ASSERT_TRUE(server.ok()) << server.status();
        servers.push_back(std::move(server).value());
      }
    }
    auto cluster = ClusterSpec::FromJobs({{"chief", {"127.0.0.1:0"}},
                                          {"worker", ServerAddresses(workers_)},
                                          {"ps", ServerAddresses(ps_)}});
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    auto strategy = distribute::ParameterServerStrategy::Create(
        {.server = {.cluster = std::move(cluster).value(), .task = {.job = "chief", .index = 0}},
         .worker_timeout_ms = 20000});
    ASSERT_TRUE(strategy.ok()) << strategy.status();
    strategy_ = std::move(strategy).value();
  }

  std::vector<std::unique_ptr<ServerProcess>> workers_;
  std::vector<std::unique_ptr<ServerProcess>> ps_;
  std::unique_ptr<distribute::ParameterServerStrategy> strategy_;
};

}  // namespace weft::cli::testing
