// What the tests of `weft train --strategy multi_worker_mirrored` share: starting real worker
// processes on loopback, each with its WEFT_CONFIG (ephemeral ports), torn down by its
// ChildProcess. For tests only; WEFT_BINARY names the `weft` binary.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "weft/testing/child_process.h"
#include "weft/testing/server_process.h"

namespace weft::cli::testing {

// `weft train --strategy multi_worker_mirrored` with `extra`, and for each of --model, --threads,
// --epochs and --collective-timeout-ms that `extra` does not name: the MLP, one thread, one epoch,
// and two minutes, so that a worker that never came (its port taken, say) fails the others with
// its name well before the tests stop waiting for them.
inline std::vector<std::string> TrainArgs(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {WEFT_BINARY, "train", "--strategy", "multi_worker_mirrored"};
  args.insert(args.end(), extra.begin(), extra.end());
  for (const auto& [flag, value] : {std::pair<std::string, std::string>{"--model", "mlp"},
                                    {"--threads", "1"},
                                    {"--epochs", "1"},
                                    {"--collective-timeout-ms", "120000"}}) {
    if (std::find(extra.begin(), extra.end(), flag) == extra.end()) {
      args.insert(args.end(), {flag, value});
    }
  }
  return args;
}

// Starts `workers` processes with their WEFT_CONFIG (only the first `started` of them when it is
// not negative).
inline std::vector<std::unique_ptr<weft::testing::ChildProcess>> StartWorkers(
    int workers, const std::vector<std::string>& extra, int started = -1) {
  const std::vector<int> ports = weft::testing::UnusedLoopbackPorts(workers);
  std::vector<std::unique_ptr<weft::testing::ChildProcess>> children;
  for (int t = 0; t < (started < 0 ? workers : started); ++t) {
    auto child = weft::testing::ChildProcess::Start(
        TrainArgs(extra), {{"WEFT_CONFIG", weft::testing::LoopbackWorkerConfig(ports, t)}});
    EXPECT_TRUE(child.ok()) << child.status();
    if (child.ok()) children.push_back(std::move(child).value());
  }
  return children;
}

}  // namespace weft::cli::testing
