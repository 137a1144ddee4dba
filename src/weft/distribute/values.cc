// DistributedValues: component access, validation, and canonical device comparison.
#include "weft/distribute/values.h"

#include "weft/core/logging.h"
#include "weft/core/str_util.h"
#include "weft/framework/device_name_utils.h"

namespace weft::distribute {

DistributedValues::DistributedValues(std::vector<Output> values) : values_(std::move(values)) {
  devices_.reserve(values_.size());
  for (const Output& value : values_) {
    devices_.push_back(value.node() ? value.node()->requested_device() : std::string());
  }
}

const Output& DistributedValues::value(int replica) const {
  WEFT_CHECK(replica >= 0 && replica < num_replicas())
      << "replica " << replica << " of " << num_replicas();
  return values_[replica];
}

const std::string& DistributedValues::device(int replica) const {
  WEFT_CHECK(replica >= 0 && replica < static_cast<int>(devices_.size()))
      << "replica " << replica << " of " << devices_.size();
  return devices_[replica];
}

Status DistributedValues::Validate(std::string_view what) const {
  if (values_.empty()) return InvalidArgument(what, " has no components");
  if (values_.size() != devices_.size()) {
    return InvalidArgument(what, " has ", values_.size(), " components but ", devices_.size(),
                           " devices");
  }
  for (int r = 0; r < num_replicas(); ++r) {
    if (!values_[r]) {
      return InvalidArgument(what, ": the component of replica ", r, " (device '", devices_[r],
                             "') is empty");
    }
    if (values_[r].dtype() != values_[0].dtype()) {
      return InvalidArgument(what, ": replica ", r, " holds ", DataTypeName(values_[r].dtype()),
                             " but replica 0 holds ", DataTypeName(values_[0].dtype()));
    }
  }
  return Status::OK();
}

std::string CanonicalDevice(std::string_view device) {
  StatusOr<ParsedDeviceName> parsed = ParseDeviceName(device);
  if (!parsed.ok()) return std::string(device);
  return ParsedNameToString(*parsed);
}

bool SameDevices(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (CanonicalDevice(a[i]) != CanonicalDevice(b[i])) return false;
  }
  return true;
}

}  // namespace weft::distribute
