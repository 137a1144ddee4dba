// The "cluster" object shared by WEFT_CONFIG and TF_CONFIG ({"worker": ["host:port", ...], ...}),
// read as written: a job with an empty list is kept, so that ClusterSpec::FromJobs names it rather
// than the job silently vanishing. Errors start with `source` ("TF_CONFIG"). Stateless.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "weft/core/statusor.h"

namespace weft::internal {

inline StatusOr<std::map<std::string, std::vector<std::string>>> ReadClusterJobs(
    const nlohmann::json& config, std::string_view source, std::string_view example_job) {
  if (!config.is_object() || !config.contains("cluster") || !config["cluster"].is_object()) {
    return InvalidArgument(source, " needs an object \"cluster\": {\"", example_job,
                           "\": [\"host:port\"]}");
  }
  std::map<std::string, std::vector<std::string>> jobs;
  for (const auto& [job, addresses] : config["cluster"].items()) {
    if (!addresses.is_array()) {
      return InvalidArgument(source, ": cluster job '", job, "' must be a list of addresses");
    }
    std::vector<std::string>& tasks = jobs[job];
    for (const auto& address : addresses) {
      if (!address.is_string()) {
        return InvalidArgument(source, ": cluster job '", job,
                               "' has an address that is not a string: ", address.dump());
      }
      tasks.push_back(address.get<std::string>());
    }
  }
  return jobs;
}

}  // namespace weft::internal
