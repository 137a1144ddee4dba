// The `weft` command line: `weft train ...` (and later `weft server ...`). Bad flags print usage
// and exit with status 2.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "weft/cli/blas_environment.h"
#include "weft/cli/train_command.h"

int main(int argc, char** argv) {
  weft::cli::EnsureBlasCoreType(argv);
  CLI::App app{"Weft: a C++ training runtime after TensorFlow's distributed runtime", "weft"};
  app.require_subcommand(1);
  weft::cli::TrainFlags train_flags;
  CLI::App* train = weft::cli::AddTrainCommand(app, train_flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "weft: %s\n\n", error.what());
    CLI::App* shown = train->parsed() ? train : &app;
    std::fprintf(stderr, "%s", shown->help().c_str());
    return 2;
  }
  if (train->parsed()) return weft::cli::RunTrainCommand(train_flags);
  return 2;
}
