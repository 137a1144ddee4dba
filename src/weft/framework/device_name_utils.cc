#include "weft/framework/device_name_utils.h"

#include <cctype>
#include <string>

namespace weft {
namespace {

// `[A-Za-z][A-Za-z0-9_]*`: the spelling of job names and device types.
bool IsIdentifier(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// Decimal digits only, at most 9 of them so the value fits an int.
bool ParseIndex(std::string_view s, int* value) {
  if (s.empty() || s.size() > 9) return false;
  int result = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    result = result * 10 + (c - '0');
  }
  *value = result;
  return true;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Parses the '/'-separated components of `spec` into `name`, one at a time, remembering which of
// job, replica, task and device were already given so that repeats are rejected.
class ComponentParser {
 public:
  ComponentParser(std::string_view spec, ParsedDeviceName* name) : spec_(spec), name_(name) {}

  Status Parse(std::string_view part) {
    if (part.empty()) return Error("empty component (a doubled or trailing '/')");
    size_t colon = part.find(':');
    if (colon == std::string_view::npos) {
      return Error("component '", part, "' is not of the form 'key:value'");
    }
    std::string_view key = part.substr(0, colon);
    std::string_view value = part.substr(colon + 1);
    if (key == "job") return ParseJob(value);
    if (key == "replica") {
      return ParseIndexPart("replica", value, &seen_replica_, &name_->has_replica, &name_->replica);
    }
    if (key == "task")
      return ParseIndexPart("task", value, &seen_task_, &name_->has_task, &name_->task);
    if (key == "device") return ParseDevice(value);
    if (EqualsIgnoreCase(key, "cpu") || EqualsIgnoreCase(key, "gpu")) {
      return ParseLegacyDevice(key, value);
    }
    return Error("unknown component '", part,
                 "' (expected job:, replica:, task:, device: or the legacy cpu:/gpu:)");
  }

 private:
  template <typename... Args>
  Status Error(Args&&... detail) const {
    return InvalidArgument("Malformed device specification '", spec_,
                           "': ", std::forward<Args>(detail)...);
  }

  Status ParseJob(std::string_view value) {
    if (seen_job_) return Error("the job is given twice");
    seen_job_ = true;
    if (value == "*") return Status::OK();
    if (!IsIdentifier(value)) {
      return Error("job name '", value, "' must be a letter followed by letters, digits or '_'");
    }
    name_->has_job = true;
    name_->job = std::string(value);
    return Status::OK();
  }

  Status ParseIndexPart(std::string_view what, std::string_view value, bool* seen, bool* has,
                        int* index) {
    if (*seen) return Error("the ", what, " is given twice");
    *seen = true;
    if (value == "*") return Status::OK();
    if (!ParseIndex(value, index)) {
      return Error(what, " '", value, "' is not a non-negative integer or '*'");
    }
    *has = true;
    return Status::OK();
  }

  Status ParseDeviceId(std::string_view value) {
    if (value == "*") return Status::OK();
    if (!ParseIndex(value, &name_->id)) {
      return Error("device id '", value, "' is not a non-negative integer or '*'");
    }
    name_->has_id = true;
    return Status::OK();
  }

  // "TYPE", "TYPE:id", "TYPE:*", "*:id" or "*".
  Status ParseDevice(std::string_view value) {
    if (seen_device_) return Error("the device is given twice");
    seen_device_ = true;
    size_t colon = value.find(':');
    std::string_view type = value.substr(0, colon);
    if (type.empty()) return Error("the device type is empty");
    if (type != "*") {
      if (!IsIdentifier(type)) {
        return Error("device type '", type,
                     "' must be a letter followed by letters, digits or '_'");
      }
      name_->has_type = true;
      name_->type = CanonicalDeviceType(type);
    }
    if (colon == std::string_view::npos) return Status::OK();
    return ParseDeviceId(value.substr(colon + 1));
  }

  // "/cpu:0", "/GPU:*".
  Status ParseLegacyDevice(std::string_view type, std::string_view value) {
    if (seen_device_) return Error("the device is given twice");
    seen_device_ = true;
    name_->has_type = true;
    name_->type = CanonicalDeviceType(type);
    return ParseDeviceId(value);
  }

  std::string_view spec_;
  ParsedDeviceName* name_;
  bool seen_job_ = false;
  bool seen_replica_ = false;
  bool seen_task_ = false;
  bool seen_device_ = false;
};

}  // namespace

bool operator==(const ParsedDeviceName& a, const ParsedDeviceName& b) {
  return a.has_job == b.has_job && (!a.has_job || a.job == b.job) &&
         a.has_replica == b.has_replica && (!a.has_replica || a.replica == b.replica) &&
         a.has_task == b.has_task && (!a.has_task || a.task == b.task) &&
         a.has_type == b.has_type && (!a.has_type || a.type == b.type) && a.has_id == b.has_id &&
         (!a.has_id || a.id == b.id);
}

StatusOr<ParsedDeviceName> ParseDeviceName(std::string_view spec) {
  ParsedDeviceName result;
  if (spec.empty() || spec == "/") return result;
  if (spec.front() != '/') {
    return InvalidArgument("Malformed device specification '", spec, "': must start with '/'");
  }
  ComponentParser parser(spec, &result);
  std::string_view rest = spec.substr(1);
  while (true) {
    size_t slash = rest.find('/');
    WEFT_RETURN_IF_ERROR(parser.Parse(rest.substr(0, slash)));
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  return result;
}

std::string ParsedNameToString(const ParsedDeviceName& name) {
  std::string out;
  if (name.has_job) out += StrCat("/job:", name.job);
  if (name.has_replica) out += StrCat("/replica:", name.replica);
  if (name.has_task) out += StrCat("/task:", name.task);
  if (name.has_type || name.has_id) {
    out += StrCat("/device:", name.has_type ? name.type : "*", ":");
    out += name.has_id ? std::to_string(name.id) : "*";
  }
  return out;
}

std::string CanonicalDeviceType(std::string_view type) {
  if (EqualsIgnoreCase(type, "cpu")) return "CPU";
  if (EqualsIgnoreCase(type, "gpu")) return "GPU";
  return std::string(type);
}

bool IsFullySpecified(const ParsedDeviceName& name) {
  return name.has_job && name.has_replica && name.has_task && name.has_type && name.has_id;
}

bool IsSpecification(const ParsedDeviceName& less_specific, const ParsedDeviceName& more_specific) {
  const ParsedDeviceName& a = less_specific;
  const ParsedDeviceName& b = more_specific;
  return (!a.has_job || (b.has_job && a.job == b.job)) &&
         (!a.has_replica || (b.has_replica && a.replica == b.replica)) &&
         (!a.has_task || (b.has_task && a.task == b.task)) &&
         (!a.has_type || (b.has_type && a.type == b.type)) &&
         (!a.has_id || (b.has_id && a.id == b.id));
}

bool IsCompleteSpecification(const ParsedDeviceName& pattern, const ParsedDeviceName& name) {
  return IsFullySpecified(name) && IsSpecification(pattern, name);
}

bool AreCompatible(const ParsedDeviceName& a, const ParsedDeviceName& b) {
  return (!a.has_job || !b.has_job || a.job == b.job) &&
         (!a.has_replica || !b.has_replica || a.replica == b.replica) &&
         (!a.has_task || !b.has_task || a.task == b.task) &&
         (!a.has_type || !b.has_type || a.type == b.type) &&
         (!a.has_id || !b.has_id || a.id == b.id);
}

Status MergeDevNames(ParsedDeviceName* target, const ParsedDeviceName& other,
                     bool allow_soft_placement) {
  ParsedDeviceName merged = *target;
  auto conflict = [&](std::string_view what) {
    return InvalidArgument("Cannot merge device specifications '", ParsedNameToString(*target),
                           "' and '", ParsedNameToString(other), "': they name different ", what);
  };
  if (other.has_job) {
    if (merged.has_job && merged.job != other.job) return conflict("jobs");
    merged.has_job = true;
    merged.job = other.job;
  }
  if (other.has_replica) {
    if (merged.has_replica && merged.replica != other.replica) return conflict("replicas");
    merged.has_replica = true;
    merged.replica = other.replica;
  }
  if (other.has_task) {
    if (merged.has_task && merged.task != other.task) return conflict("tasks");
    merged.has_task = true;
    merged.task = other.task;
  }
  if (other.has_type) {
    if (merged.has_type && merged.type != other.type) {
      if (!allow_soft_placement) return conflict("device types");
      // Soft placement: the type is left open, and an id without a type means nothing.
      merged.has_type = false;
      merged.has_id = false;
      *target = std::move(merged);
      return Status::OK();
    }
    merged.has_type = true;
    merged.type = other.type;
  }
  if (other.has_id) {
    if (merged.has_id && merged.id != other.id) {
      if (!allow_soft_placement) return conflict("device ids");
      merged.has_id = false;
    } else {
      merged.has_id = true;
      merged.id = other.id;
    }
  }
  *target = std::move(merged);
  return Status::OK();
}

std::string FullName(std::string_view job, int replica, int task, std::string_view type, int id) {
  return StrCat("/job:", job, "/replica:", replica, "/task:", task,
                "/device:", CanonicalDeviceType(type), ":", id);
}

StatusOr<std::string> CanonicalizeDeviceName(std::string_view fullname_or_partial,
                                             std::string_view basename) {
  WEFT_ASSIGN_OR_RETURN(ParsedDeviceName name, ParseDeviceName(fullname_or_partial));
  WEFT_ASSIGN_OR_RETURN(ParsedDeviceName result, ParseDeviceName(basename));
  if (name.has_job) {
    result.has_job = true;
    result.job = name.job;
  }
  if (name.has_replica) {
    result.has_replica = true;
    result.replica = name.replica;
  }
  if (name.has_task) {
    result.has_task = true;
    result.task = name.task;
  }
  if (name.has_type) {
    // Another type makes the base's id meaningless unless the spec gives one.
    if (!result.has_type || result.type != name.type) result.has_id = false;
    result.has_type = true;
    result.type = name.type;
  }
  if (name.has_id) {
    result.has_id = true;
    result.id = name.id;
  }
  return ParsedNameToString(result);
}

}  // namespace weft
