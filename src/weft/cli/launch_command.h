// `weft launch --workers N [--devices-per-worker K] [--timeout-ms T] -- CMD ARGS...`: starts N
// local copies of CMD, each with WEFT_CONFIG naming its task of an N-worker cluster on free
// loopback ports and WEFT_DEVICES_PER_WORKER=K; prefixes each output line with "[worker I] ",
// forwards SIGINT/SIGTERM, and when one fails stops the rest and exits with its code.
// With `--elastic` the workers train on when one is lost (RunElastic; the launch hosts their
// ElasticMembership, named to them by WEFT_ELASTIC_MEMBERSHIP) and `--restart-failed` starts a
// lost worker again, which joins the others. With `--ps M` it starts a parameter-server job instead
// (see PlanPsLaunch): N worker and M ps `weft server`s, and CMD once, as the chief; the chief's
// exit ends the launch and every server. RunLaunchCommand installs process-wide signal handlers:
// call it once, from main. The helpers below are stateless and thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "weft/cli/process_group.h"
#include "weft/core/statusor.h"

namespace weft::cli {

struct LaunchFlags {
  int workers = 0;
  int ps = 0;  // 0: no parameter servers, the workers run the command
  // Elastic training (docs/elastic.md): the launch hosts the membership; a worker lost to a signal
  // leaves the job, which goes on with the others (at least min_workers of them).
  bool elastic = false;
  int min_workers = 1;
  int64_t min_workers_timeout_ms = 60000;  // then the waiting workers fail, naming the missing
  bool restart_failed = false;
  int max_restarts = 3;
  int devices_per_worker = 1;
  int64_t timeout_ms = 10000;
  std::vector<std::string> command;
};

CLI::App* AddLaunchCommand(CLI::App& app, LaunchFlags& flags);

// The variable that gives the workers of an elastic launch the membership's address.
inline constexpr char kElasticMembershipVariable[] = "WEFT_ELASTIC_MEMBERSHIP";
// And --min-workers (the global batch must split over every member count from it up).
inline constexpr char kElasticMinWorkersVariable[] = "WEFT_ELASTIC_MIN_WORKERS";

// Returns the process exit code: without --ps, 0 when every worker succeeded, else the first
// failure's code (128 + signal for a worker a signal ended, 127 for one that could not start);
// with --ps, the chief's code (127 when a process could not start); 1 when no free ports could be
// found.
int RunLaunchCommand(const LaunchFlags& flags);

// The WEFT_CONFIG JSON of task `index` of the worker job at `addresses`.
std::string WeftConfigJson(const std::vector<std::string>& addresses, int index);
// The WEFT_CONFIG JSON of task `job`:`index` of the cluster `jobs` (job -> task addresses).
std::string WeftConfigJson(const std::map<std::string, std::vector<std::string>>& jobs,
                           const std::string& job, int index);

// The processes of `weft launch --ps`: one `weft server` per worker and ps task (`server_binary
// server --job J --task I`, WEFT_CONFIG naming that task), restarted up to --max-restarts times
// with --restart-failed, and the command as the chief (WEFT_CONFIG task chief:0). Every one sees
// the cluster {chief: [addresses[0]'s host, port 0], worker: the next N, ps: the last M}: no task
// dials the chief (its sessions send the address it serves at), so it binds a port of its own
// choosing rather than racing other processes for a port picked here. The workers and the chief
// also get WEFT_DEVICES_PER_WORKER. `tasks` and `addresses` name each process in
// RunWithServices's order: the servers, then the chief.
struct PsLaunchPlan {
  std::map<std::string, std::vector<std::string>> cluster;
  std::vector<ServiceSpec> servers;
  ChildSpec chief;
  std::vector<std::string> tasks;  // "worker:0", ..., "ps:0", ..., "chief:0"
  std::vector<std::string> addresses;
};

// `addresses` holds N + M + 1 "host:port"s; `base_env` is every process's environment before
// its own variables.
PsLaunchPlan PlanPsLaunch(const LaunchFlags& flags, const std::vector<std::string>& addresses,
                          const std::vector<std::string>& base_env,
                          const std::string& server_binary);

}  // namespace weft::cli
