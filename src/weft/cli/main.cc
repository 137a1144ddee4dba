// The `weft` command line: `weft train ...`, `weft generate ...`, `weft server ...` and
// `weft launch ...`. Bad flags
// print usage and exit with status 2.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "weft/cli/blas_environment.h"
#include "weft/cli/generate_command.h"
#include "weft/cli/launch_command.h"
#include "weft/cli/security_flags.h"
#include "weft/cli/server_command.h"
#include "weft/cli/train_command.h"
#include "weft/core/cpu_support.h"
#include "weft/distributed/rpc/grpc_server.h"
#include "weft/distributed/rpc/grpc_session.h"

int main(int argc, char** argv) {
  if (weft::Status cpu = weft::CheckCpuSupportsBuild(); !cpu.ok()) {
    std::fprintf(stderr, "weft: %s\n", cpu.ToString().c_str());
    return 1;
  }
  weft::cli::EnsureBlasCoreType(argv);
  CLI::App app{"Weft: a C++ training runtime after TensorFlow's distributed runtime", "weft"};
  app.require_subcommand(1);
  weft::cli::TrainFlags train_flags;
  CLI::App* train = weft::cli::AddTrainCommand(app, train_flags);
  weft::cli::GenerateFlags generate_flags;
  CLI::App* generate = weft::cli::AddGenerateCommand(app, generate_flags);
  weft::cli::ServerFlags server_flags;
  CLI::App* server = weft::cli::AddServerCommand(app, server_flags);
  weft::cli::LaunchFlags launch_flags;
  CLI::App* launch = weft::cli::AddLaunchCommand(app, launch_flags);
  // One set of security flags, whichever command takes them: they go to the environment.
  weft::cli::SecurityFlags security_flags;
  weft::cli::AddSecurityFlags(train, security_flags, /*with_insecure=*/true);
  weft::cli::AddSecurityFlags(server, security_flags, /*with_insecure=*/true);
  weft::cli::AddSecurityFlags(launch, security_flags, /*with_insecure=*/true);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    std::fprintf(stderr, "weft: %s\n\n", error.what());
    CLI::App* shown = train->parsed()      ? train
                      : generate->parsed() ? generate
                      : server->parsed()   ? server
                      : launch->parsed()   ? launch
                                           : &app;
    std::fprintf(stderr, "%s", shown->help().c_str());
    return 2;
  }
  if (weft::Status applied = weft::cli::ApplySecurityFlags(security_flags); !applied.ok()) {
    std::fprintf(stderr, "weft: %s\n", applied.ToString().c_str());
    return 2;
  }
  weft::RegisterGrpcSessionFactory();
  weft::RegisterGrpcServerFactory();
  if (train->parsed()) return weft::cli::RunTrainCommand(train_flags);
  if (generate->parsed()) return weft::cli::RunGenerateCommand(generate_flags);
  if (server->parsed()) return weft::cli::RunServerCommand(server_flags);
  if (launch->parsed()) return weft::cli::RunLaunchCommand(launch_flags);
  return 2;
}
