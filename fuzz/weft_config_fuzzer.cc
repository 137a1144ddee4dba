// libFuzzer target: how a worker process finds its cluster (distributed/cluster/cluster_resolver.h,
// cluster_spec.h): WEFT_CONFIG, TF_CONFIG, the --cluster flag and whole environments.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"

#include "weft/core/logging.h"
#include "weft/distributed/cluster/cluster_resolver.h"
#include "weft/distributed/cluster/cluster_spec.h"

namespace weft::fuzz {
namespace {

void CheckFlagRoundTrip(const ClusterSpec& spec) {
  StatusOr<ClusterSpec> again = ClusterSpec::FromFlag(spec.ToFlag());
  WEFT_CHECK(again.ok()) << "'" << spec.ToFlag() << "' does not parse: " << again.status();
  WEFT_CHECK(again->jobs() == spec.jobs()) << "'" << spec.ToFlag() << "' changed on a round trip";
}

// The task index the JSON gives, read independently of the parser under test (as int64, so that a
// value beyond int cannot alias a valid task unnoticed).
int64_t JsonTaskIndex(const std::string& text) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto task = json.find("task");
  if (task == json.end() || !task->contains("index")) return 0;
  return (*task)["index"].get<int64_t>();
}

Environment ParseEnvironment(std::string_view text) {
  Environment env;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    env[std::string(line.substr(0, equals))] = std::string(line.substr(equals + 1));
  }
  return env;
}

}  // namespace
}  // namespace weft::fuzz

// Input: one mode byte (0: WEFT_CONFIG JSON, 1: TF_CONFIG JSON, 2: the --cluster flag, 3: an
// environment of "NAME=value" lines for ResolveCluster, Slurm and Open MPI variables included),
// then the text. A spec that parses must survive its flag form (FromFlag(ToFlag())), and the task
// must be the one the JSON names.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft;  // NOLINT(build/namespaces): a C entry point
  fuzz::InputReader input(data, size);
  const uint8_t mode = input.TakeByte() % 4;
  const std::string text(input.TakeRest());
  if (mode == 0) {
    StatusOr<ServerConfig> config = ParseWeftConfig(text);
    if (config.ok()) {
      fuzz::CheckFlagRoundTrip(config->cluster);
      WEFT_CHECK(ValidateTask(config->cluster, config->task).ok());
      WEFT_CHECK(config->task.index == fuzz::JsonTaskIndex(text))
          << "WEFT_CONFIG names task " << fuzz::JsonTaskIndex(text) << " but resolved to "
          << config->task.index;
    }
  } else if (mode == 1) {
    StatusOr<ServerConfig> config = ParseTfConfig(text);
    if (config.ok()) {
      fuzz::CheckFlagRoundTrip(config->cluster);
      // A reference worker i is Weft's worker i or i+1 (after the chief); other jobs keep i.
      const int64_t index = fuzz::JsonTaskIndex(text);
      WEFT_CHECK(config->task.index == index || config->task.index == index + 1)
          << "TF_CONFIG names task " << index << " but resolved to " << config->task.index;
    }
  } else if (mode == 2) {
    StatusOr<ClusterSpec> spec = ClusterSpec::FromFlag(text);
    if (spec.ok()) {
      fuzz::CheckFlagRoundTrip(*spec);
      StatusOr<ClusterSpec> from_proto = ClusterSpec::FromProto(spec->ToProto());
      WEFT_CHECK(from_proto.ok() && from_proto->jobs() == spec->jobs());
    }
  } else {
    ResolveOptions options;
    const Environment env = fuzz::ParseEnvironment(text);
    auto coordinator = env.find("FUZZ_COORDINATOR_FLAG");  // the --coordinator flag
    if (coordinator != env.end()) options.coordinator = coordinator->second;
    StatusOr<ResolvedCluster> resolved = ResolveCluster(env, options);
    if (resolved.ok() && !resolved->config.cluster.empty()) {
      fuzz::CheckFlagRoundTrip(resolved->config.cluster);
    }
  }
  return 0;
}
