#include "weft/distributed/cluster/cluster_spec.h"

#include <cctype>
#include <charconv>

#include <nlohmann/json.hpp>

#include "weft/core/str_util.h"
#include "weft/distributed/cluster/internal/cluster_json.h"

namespace weft {
namespace {

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

Status CheckJobName(std::string_view job) {
  bool ok = !job.empty() && std::islower(static_cast<unsigned char>(job[0]));
  for (char c : job) {
    ok = ok && (std::islower(static_cast<unsigned char>(c)) ||
                std::isdigit(static_cast<unsigned char>(c)) || c == '_');
  }
  if (!ok) {
    return InvalidArgument("bad job name '", job,
                           "': use lower-case letters, digits and '_', starting with a letter");
  }
  return Status::OK();
}

// "host:port" with a non-empty host and a port in [0, 65535] (0: pick a free port). No host name
// holds ',' or ';', and an address that did could not be written as a flag (ToFlag) and read back.
Status CheckAddress(std::string_view job, size_t task, std::string_view address) {
  if (address.find_first_of(",;") != std::string_view::npos) {
    return InvalidArgument("task ", task, " of job '", job, "' has address '", address,
                           "', which holds a ',' or ';'; expected host:port");
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return InvalidArgument("task ", task, " of job '", job, "' has address '", address,
                           "'; expected host:port");
  }
  std::string_view port_text = address.substr(colon + 1);
  int port = -1;
  auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port < 0 ||
      port > 65535) {
    return InvalidArgument("task ", task, " of job '", job, "' has address '", address,
                           "' whose port '", port_text, "' is not a number in [0, 65535]");
  }
  return Status::OK();
}

}  // namespace

StatusOr<ClusterSpec> ClusterSpec::FromJobs(std::map<std::string, std::vector<std::string>> jobs) {
  if (jobs.empty()) return InvalidArgument("a cluster needs at least one job");
  for (const auto& [job, addresses] : jobs) {
    WEFT_RETURN_IF_ERROR(CheckJobName(job));
    if (addresses.empty()) return InvalidArgument("job '", job, "' has no tasks");
    for (size_t task = 0; task < addresses.size(); ++task) {
      WEFT_RETURN_IF_ERROR(CheckAddress(job, task, addresses[task]));
    }
  }
  return ClusterSpec(std::move(jobs));
}

StatusOr<ClusterSpec> ClusterSpec::FromFlag(std::string_view spec) {
  std::map<std::string, std::vector<std::string>> jobs;
  for (std::string_view part : Split(spec, ';')) {
    const size_t equals = part.find('=');
    if (equals == std::string_view::npos) {
      return InvalidArgument("cluster spec '", spec, "': '", part,
                             "' is not job=host:port[,host:port...]");
    }
    std::string job(part.substr(0, equals));
    if (jobs.count(job))
      return InvalidArgument("cluster spec '", spec, "' names job '", job, "' twice");
    std::vector<std::string>& addresses = jobs[job];
    for (std::string_view address : Split(part.substr(equals + 1), ',')) {
      addresses.emplace_back(address);
    }
  }
  StatusOr<ClusterSpec> cluster = FromJobs(std::move(jobs));
  if (!cluster.ok()) return cluster.status().WithContext(StrCat("cluster spec '", spec, "'"));
  return cluster;
}

bool ClusterSpec::HasJob(std::string_view job) const { return jobs_.count(std::string(job)) > 0; }

int ClusterSpec::NumTasks(std::string_view job) const {
  auto it = jobs_.find(std::string(job));
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

StatusOr<std::string> ClusterSpec::TaskAddress(std::string_view job, int task) const {
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) {
    std::vector<std::string> names;
    for (const auto& [name, addresses] : jobs_) names.push_back(name);
    return NotFound("the cluster has no job '", job, "' (jobs: ", StrJoin(names, ", "), ")");
  }
  if (task < 0 || task >= static_cast<int>(it->second.size())) {
    return NotFound("job '", job, "' has no task ", task, " (it has ", it->second.size(),
                    " task(s))");
  }
  return it->second[task];
}

std::vector<std::string> ClusterSpec::TaskNames() const {
  std::vector<std::string> names;
  for (const auto& [job, addresses] : jobs_) {
    for (size_t task = 0; task < addresses.size(); ++task) {
      names.push_back(StrCat("/job:", job, "/replica:0/task:", task));
    }
  }
  return names;
}

std::string ClusterSpec::ToFlag() const {
  std::vector<std::string> parts;
  for (const auto& [job, addresses] : jobs_) parts.push_back(job + "=" + StrJoin(addresses, ","));
  return StrJoin(parts, ";");
}

Status ValidateTask(const ClusterSpec& cluster, const TaskId& task) {
  StatusOr<std::string> address = cluster.TaskAddress(task.job, task.index);
  if (!address.ok()) {
    return InvalidArgument("task ", task.job, ":", task.index, " is not in the cluster ",
                           cluster.ToFlag(), ": ", address.status().message());
  }
  return Status::OK();
}

StatusOr<ServerConfig> ParseWeftConfig(std::string_view json_text) {
  nlohmann::json config = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) {
    return InvalidArgument("WEFT_CONFIG is not valid JSON: '", json_text, "'");
  }
  WEFT_ASSIGN_OR_RETURN(auto jobs, internal::ReadClusterJobs(config, "WEFT_CONFIG", "job"));
  const auto chief = jobs.find("chief");
  if (chief != jobs.end() && chief->second.size() > 1) {
    return InvalidArgument("WEFT_CONFIG: job 'chief' has ", chief->second.size(),
                           " tasks; at most one");
  }
  ServerConfig result;
  StatusOr<ClusterSpec> cluster = ClusterSpec::FromJobs(std::move(jobs));
  if (!cluster.ok()) return cluster.status().WithContext("WEFT_CONFIG");
  result.cluster = *std::move(cluster);
  if (!config.contains("task")) {
    return InvalidArgument("WEFT_CONFIG needs \"task\": {\"type\": job, \"index\": n}");
  }
  const nlohmann::json& task = config["task"];
  if (!task.is_object() || !task.contains("type") || !task["type"].is_string() ||
      !task.contains("index") || !task["index"].is_number_integer()) {
    return InvalidArgument("WEFT_CONFIG: \"task\" must be {\"type\": job, \"index\": n}, not ",
                           task.dump());
  }
  result.task.job = task["type"].get<std::string>();
  result.task.index = task["index"].get<int>();
  Status valid = ValidateTask(result.cluster, result.task);
  if (!valid.ok()) return valid.WithContext("WEFT_CONFIG");
  return result;
}

StatusOr<ClusterSpec> ClusterSpec::FromProto(const proto::ClusterDef& cluster_def) {
  std::map<std::string, std::vector<std::string>> jobs;
  for (const proto::JobDef& job : cluster_def.job()) {
    if (jobs.count(job.name()) > 0) {
      return InvalidArgument("cluster_def names job '", job.name(), "' twice");
    }
    std::vector<std::string>& addresses = jobs[job.name()];
    addresses.resize(job.tasks_size());
    for (const auto& [index, address] : job.tasks()) {
      if (index < 0 || index >= job.tasks_size()) {
        return InvalidArgument("cluster_def job '", job.name(), "' has task ", index, " of ",
                               job.tasks_size(), " tasks; task indices must be 0..",
                               job.tasks_size() - 1);
      }
      addresses[index] = address;
    }
  }
  return FromJobs(std::move(jobs));
}

proto::ClusterDef ClusterSpec::ToProto() const {
  proto::ClusterDef cluster_def;
  for (const auto& [name, addresses] : jobs_) {
    proto::JobDef* job = cluster_def.add_job();
    job->set_name(name);
    for (size_t i = 0; i < addresses.size(); ++i) {
      (*job->mutable_tasks())[static_cast<int>(i)] = addresses[i];
    }
  }
  return cluster_def;
}

}  // namespace weft
