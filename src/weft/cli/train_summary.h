// The JSON summary line of `weft train --json`: the run's figures, its traced steps, every
// worker's step phases and the stragglers named (docs/elastic.md tells what the last two mean).
#pragma once

#include <nlohmann/json.hpp>

#include "weft/cli/train_command.h"
#include "weft/train/train_loop.h"

namespace weft::cli {

// `fingerprint`: the variables' fingerprint in hex.
nlohmann::json SummaryJson(const TrainFlags& flags, const train::TrainOptions& options,
                           const train::TrainSummary& summary, const char* fingerprint);

}  // namespace weft::cli
