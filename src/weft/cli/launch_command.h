// `weft launch --workers N [--devices-per-worker K] [--timeout-ms T] -- CMD ARGS...`: starts N
// local copies of CMD, each with WEFT_CONFIG naming its task of an N-worker cluster on free
// loopback ports and WEFT_DEVICES_PER_WORKER=K; prefixes each output line with "[worker I] ",
// forwards SIGINT/SIGTERM, and when one fails stops the rest and exits with its code.
// RunLaunchCommand installs process-wide signal handlers: call it once, from main. The helpers
// below are stateless and thread-safe.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "weft/core/statusor.h"

namespace weft::cli {

struct LaunchFlags {
  int workers = 0;
  int devices_per_worker = 1;
  int64_t timeout_ms = 10000;
  std::vector<std::string> command;
};

CLI::App* AddLaunchCommand(CLI::App& app, LaunchFlags& flags);

// Returns the process exit code: 0 when every worker succeeded, else the first failure's code
// (128 + signal for a worker a signal ended, 127 for one that could not start); 1 when no free
// ports could be found.
int RunLaunchCommand(const LaunchFlags& flags);

// `count` distinct free ports on `host` (an IPv4 address), found by binding port 0 and closing.
// Another process may take one before the worker binds it: that worker then fails to start, naming
// the port, and the launch stops with its code (nothing runs with a wrong cluster).
StatusOr<std::vector<int>> PickFreePorts(int count, const std::string& host = "127.0.0.1");

// The WEFT_CONFIG JSON of task `index` of the worker job at `addresses`.
std::string WeftConfigJson(const std::vector<std::string>& addresses, int index);

}  // namespace weft::cli
