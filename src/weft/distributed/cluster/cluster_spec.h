// ClusterSpec: the jobs of a cluster and the address of each of their tasks, e.g. "worker" ->
// {"127.0.0.1:2222", "127.0.0.1:2223"}. Read from the `weft server --cluster` flag
// ("worker=127.0.0.1:2222,127.0.0.1:2223;ps=127.0.0.1:2224") or from the JSON of the WEFT_CONFIG
// environment variable ({"cluster": {"worker": [...]}, "task": {"type": "worker", "index": 0}}).
// Every malformed part is an InvalidArgument naming it. Immutable; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "weft/cluster.pb.h"
#include "weft/core/statusor.h"

namespace weft {

class ClusterSpec {
 public:
  ClusterSpec() = default;

  // "job=host:port,host:port;job=host:port". Jobs in any order, each once, with at least one
  // task; names are lower-case letters, digits and '_' (starting with a letter).
  static StatusOr<ClusterSpec> FromFlag(std::string_view spec);
  // From job name -> task addresses; the same checks as FromFlag.
  static StatusOr<ClusterSpec> FromJobs(std::map<std::string, std::vector<std::string>> jobs);

  // From a session's ClusterDef: task indices of each job must be 0..n-1.
  static StatusOr<ClusterSpec> FromProto(const proto::ClusterDef& cluster_def);
  proto::ClusterDef ToProto() const;
  bool empty() const { return jobs_.empty(); }

  const std::map<std::string, std::vector<std::string>>& jobs() const { return jobs_; }
  bool HasJob(std::string_view job) const;
  // 0 for an unknown job.
  int NumTasks(std::string_view job) const;
  // NotFound naming the job (and the jobs there are) or the task index (and the count).
  StatusOr<std::string> TaskAddress(std::string_view job, int task) const;
  // "/job:<job>/replica:0/task:<i>" for every task, jobs in name order.
  std::vector<std::string> TaskNames() const;
  // The flag form, jobs in name order (FromFlag(ToFlag()) gives the same spec).
  std::string ToFlag() const;

 private:
  explicit ClusterSpec(std::map<std::string, std::vector<std::string>> jobs)
      : jobs_(std::move(jobs)) {}
  std::map<std::string, std::vector<std::string>> jobs_;
};

// Which task of the cluster a server is.
struct TaskId {
  std::string job;
  int index = 0;
};

// Checks that `task` names an existing task of `cluster`; the error names both.
Status ValidateTask(const ClusterSpec& cluster, const TaskId& task);

struct ServerConfig {
  ClusterSpec cluster;
  TaskId task;
};

// Parses the JSON text of WEFT_CONFIG (see above). Jobs are taken as written (a "chief" job, which
// `weft launch --ps` writes, stays a job of its own and may have one task); errors say which field
// or job is wrong and quote the JSON parser's message for text that is not JSON.
StatusOr<ServerConfig> ParseWeftConfig(std::string_view json_text);

}  // namespace weft
