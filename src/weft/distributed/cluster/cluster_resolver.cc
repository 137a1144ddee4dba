#include "weft/distributed/cluster/cluster_resolver.h"

#include <charconv>

#include <nlohmann/json.hpp>

#include "weft/core/str_util.h"
#include "weft/distributed/cluster/internal/cluster_json.h"
#include "weft/distributed/cluster/slurm_node_list.h"

extern char** environ;

namespace weft {
namespace {

// The value of `name`, or "" when unset (an empty value counts as unset).
std::string Get(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

StatusOr<int> ParseInt(const std::string& name, const std::string& text, int min, int max) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return InvalidArgument(name, "='", text, "' is not an integer in [", min, ", ", max, "]");
  }
  return value;
}

// An optional integer variable: `fallback` when unset.
StatusOr<int> ParseOptionalInt(const Environment& env, const std::string& name, int min, int max,
                               int fallback) {
  const std::string text = Get(env, name);
  if (text.empty()) return fallback;
  return ParseInt(name, text, min, max);
}

// "host:port" with a port in [1, 65535]; `default_host` fills a bare ":port".
StatusOr<std::string> ParseCoordinator(const std::string& where, const std::string& text,
                                       const std::string& default_host) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgument(where, "='", text, "' is not HOST:PORT");
  }
  std::string host = text.substr(0, colon);
  if (host.empty()) host = default_host;
  if (host.empty()) {
    return InvalidArgument(where, "='", text,
                           "' has no host (a bare :PORT needs a Slurm node list)");
  }
  StatusOr<int> port = ParseInt(StrCat(where, " port"), text.substr(colon + 1), 1, 65535);
  if (!port.ok()) return InvalidArgument(where, "='", text, "': ", port.status().message());
  return StrCat(host, ":", *port);
}

Status ResolveSlurm(const Environment& env, ResolvedCluster* out) {
  out->source = ClusterSource::kSlurm;
  const std::string ntasks = Get(env, "SLURM_NTASKS");
  if (ntasks.empty()) return InvalidArgument("SLURM_PROCID is set but SLURM_NTASKS is not");
  WEFT_ASSIGN_OR_RETURN(out->world_size, ParseInt("SLURM_NTASKS", ntasks, 1, 1 << 20));
  WEFT_ASSIGN_OR_RETURN(out->rank,
                        ParseInt("SLURM_PROCID", Get(env, "SLURM_PROCID"), 0, out->world_size - 1));
  WEFT_ASSIGN_OR_RETURN(out->local_rank,
                        ParseOptionalInt(env, "SLURM_LOCALID", 0, out->world_size - 1, 0));
  std::string list_name = "SLURM_STEP_NODELIST";
  std::string list = Get(env, list_name);
  if (list.empty()) list = Get(env, list_name = "SLURM_JOB_NODELIST");
  std::vector<std::string> nodes;
  if (!list.empty()) {
    StatusOr<std::vector<std::string>> expanded = ExpandSlurmNodeList(list);
    if (!expanded.ok()) return expanded.status().WithContext(list_name);
    nodes = *std::move(expanded);
  }
  const std::string node_id_text = Get(env, "SLURM_NODEID");
  if (!node_id_text.empty() && !nodes.empty()) {
    WEFT_ASSIGN_OR_RETURN(
        int node_id, ParseInt("SLURM_NODEID", node_id_text, 0, static_cast<int>(nodes.size()) - 1));
    out->host = nodes[node_id];
  }
  const std::string nodename = Get(env, "SLURMD_NODENAME");
  if (out->host.empty()) out->host = nodename;
  return Status::OK();
}

Status ResolveOpenMpi(const Environment& env, ResolvedCluster* out) {
  out->source = ClusterSource::kOpenMpi;
  const std::string size = Get(env, "OMPI_COMM_WORLD_SIZE");
  if (size.empty()) {
    return InvalidArgument("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
  }
  WEFT_ASSIGN_OR_RETURN(out->world_size, ParseInt("OMPI_COMM_WORLD_SIZE", size, 1, 1 << 20));
  WEFT_ASSIGN_OR_RETURN(
      out->rank,
      ParseInt("OMPI_COMM_WORLD_RANK", Get(env, "OMPI_COMM_WORLD_RANK"), 0, out->world_size - 1));
  WEFT_ASSIGN_OR_RETURN(out->local_rank, ParseOptionalInt(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0,
                                                          out->world_size - 1, 0));
  return Status::OK();
}

// The first node of the Slurm step, for a coordinator given as ":PORT".
std::string FirstSlurmNode(const Environment& env) {
  std::string list = Get(env, "SLURM_STEP_NODELIST");
  if (list.empty()) list = Get(env, "SLURM_JOB_NODELIST");
  StatusOr<std::vector<std::string>> nodes = ExpandSlurmNodeList(list);
  return nodes.ok() && !nodes->empty() ? (*nodes)[0] : std::string();
}

using Jobs = std::map<std::string, std::vector<std::string>>;

// TF_CONFIG's "cluster" as written.
StatusOr<Jobs> ReadTfJobs(const nlohmann::json& config) {
  return internal::ReadClusterJobs(config, "TF_CONFIG", "worker");
}

// Weft's task for TF_CONFIG's task `type`:`index` (see ParseTfConfig for the folded chief).
StatusOr<TaskId> TfTask(const std::string& type, int index, int num_chiefs, bool fold_chief) {
  if (type == "evaluator") {
    return InvalidArgument("TF_CONFIG: task type 'evaluator' joins no cluster; Weft runs workers");
  }
  if (type == "chief") {
    if (num_chiefs == 0) {
      return InvalidArgument("TF_CONFIG: task type 'chief' but the cluster has no 'chief' job");
    }
    if (index != 0) return InvalidArgument("TF_CONFIG: chief task index ", index, "; only 0");
    return TaskId{fold_chief ? "worker" : "chief", 0};
  }
  if (type == "worker") return TaskId{"worker", index + (fold_chief ? 1 : 0)};
  return TaskId{type, index};
}

}  // namespace

Environment ProcessEnvironment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    const size_t equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  return env;
}

std::string_view ClusterSourceName(ClusterSource source) {
  switch (source) {
    case ClusterSource::kNone:
      return "none";
    case ClusterSource::kWeftConfig:
      return "WEFT_CONFIG";
    case ClusterSource::kTfConfig:
      return "TF_CONFIG";
    case ClusterSource::kSlurm:
      return "Slurm";
    case ClusterSource::kOpenMpi:
      return "Open MPI";
  }
  return "unknown";
}

StatusOr<ServerConfig> ParseTfConfig(std::string_view json_text) {
  nlohmann::json config = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded())
    return InvalidArgument("TF_CONFIG is not valid JSON: '", json_text, "'");
  WEFT_ASSIGN_OR_RETURN(Jobs jobs, ReadTfJobs(config));
  const auto chief = jobs.find("chief");
  const int num_chiefs = chief == jobs.end() ? 0 : static_cast<int>(chief->second.size());
  if (num_chiefs > 1) {
    return InvalidArgument("TF_CONFIG: job 'chief' has ", num_chiefs, " tasks; at most one");
  }
  // Under a ps job the chief coordinates and computes nothing (ParameterServerStrategy), so it
  // keeps its job; otherwise it is one more worker (MultiWorkerMirroredStrategy).
  const bool fold_chief = num_chiefs == 1 && jobs.count("ps") == 0;
  if (fold_chief) {
    std::vector<std::string>& workers = jobs["worker"];
    workers.insert(workers.begin(), chief->second[0]);
    jobs.erase("chief");
  }
  ServerConfig result;
  StatusOr<ClusterSpec> cluster = ClusterSpec::FromJobs(std::move(jobs));
  if (!cluster.ok()) return cluster.status().WithContext("TF_CONFIG");
  result.cluster = *std::move(cluster);
  const nlohmann::json task = config.contains("task") ? config["task"] : nlohmann::json();
  if (!task.is_object() || !task.contains("type") || !task["type"].is_string() ||
      (task.contains("index") && !task["index"].is_number_integer())) {
    return InvalidArgument("TF_CONFIG: \"task\" must be {\"type\": job, \"index\": n}, not ",
                           task.dump());
  }
  const std::string type = task["type"].get<std::string>();
  const int index = task.contains("index") ? task["index"].get<int>() : 0;
  WEFT_ASSIGN_OR_RETURN(result.task, TfTask(type, index, num_chiefs, fold_chief));
  Status valid = ValidateTask(result.cluster, result.task);
  if (!valid.ok()) {
    return InvalidArgument("TF_CONFIG: task ", type, ":", index,
                           " is not in the cluster: ", valid.message());
  }
  return result;
}

StatusOr<ResolvedCluster> ResolveCluster(const Environment& env, const ResolveOptions& options) {
  ResolvedCluster out;
  WEFT_ASSIGN_OR_RETURN(out.devices_per_worker,
                        ParseOptionalInt(env, "WEFT_DEVICES_PER_WORKER", 1, 4096, 0));
  const std::string weft_config = Get(env, "WEFT_CONFIG");
  const std::string tf_config = Get(env, "TF_CONFIG");
  if (!weft_config.empty()) {
    out.source = ClusterSource::kWeftConfig;
    StatusOr<ServerConfig> config = ParseWeftConfig(weft_config);
    if (!config.ok()) return config.status();
    out.config = *std::move(config);
    return out;
  }
  if (!tf_config.empty()) {
    out.source = ClusterSource::kTfConfig;
    WEFT_ASSIGN_OR_RETURN(out.config, ParseTfConfig(tf_config));
    return out;
  }
  if (!Get(env, "SLURM_PROCID").empty()) {
    WEFT_RETURN_IF_ERROR(ResolveSlurm(env, &out));
  } else if (!Get(env, "OMPI_COMM_WORLD_RANK").empty()) {
    WEFT_RETURN_IF_ERROR(ResolveOpenMpi(env, &out));
  } else {
    return out;
  }
  const std::string weft_host = Get(env, "WEFT_HOST");
  if (!weft_host.empty()) out.host = weft_host;
  const bool from_flag = !options.coordinator.empty();
  const std::string coordinator = from_flag ? options.coordinator : Get(env, "WEFT_COORDINATOR");
  if (coordinator.empty()) {
    return InvalidArgument(ClusterSourceName(out.source), " gives rank ", out.rank, " of ",
                           out.world_size,
                           " but no coordinator: pass --coordinator HOST:PORT or set "
                           "WEFT_COORDINATOR");
  }
  const std::string default_host =
      out.source == ClusterSource::kSlurm ? FirstSlurmNode(env) : std::string();
  WEFT_ASSIGN_OR_RETURN(out.coordinator,
                        ParseCoordinator(from_flag ? "--coordinator" : "WEFT_COORDINATOR",
                                         coordinator, default_host));
  return out;
}

}  // namespace weft
