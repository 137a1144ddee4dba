// `weft generate`: samples text from a character transformer trained by `weft train --model
// char_transformer --checkpoint-dir DIR` (train/text_generation.h).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace weft::cli {

struct GenerateFlags {
  std::string checkpoint_dir;
  std::string prompt;
  int64_t tokens = 200;
  double temperature = 1.0;
  int top_k = 0;
  int64_t seed = 1;
};

// Declares the subcommand and its flags on `app`; the flags are written into `flags`.
CLI::App* AddGenerateCommand(CLI::App& app, GenerateFlags& flags);

// Prints the prompt and the text drawn after it; returns the exit code (0 ok, 2 bad input such as
// a missing checkpoint or a checkpoint of another model, 1 another failure).
int RunGenerateCommand(const GenerateFlags& flags);

}  // namespace weft::cli
