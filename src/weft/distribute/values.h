// Distributed values: one graph tensor per replica, each with the device it lives on.
// PerReplica holds unsynchronised values (each replica's own gradient, loss or batch); Mirrored
// holds values that are kept identical on every device (a reduced gradient, a broadcast). Both
// are small values of Outputs into a graph being built; like Scope they are not thread-safe.
//
// A value is well formed when it has at least one component, as many devices as values and no
// empty (null) Output; the constructors accept anything, Validate() says what is wrong, and the
// APIs that take a value (CrossDeviceOps, Strategy) call it and return its error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "weft/core/status.h"
#include "weft/graph/builder/scope.h"

namespace weft::distribute {

class DistributedValues {
 public:
  DistributedValues() = default;
  // values[r] lives on devices[r].
  DistributedValues(std::vector<Output> values, std::vector<std::string> devices)
      : values_(std::move(values)), devices_(std::move(devices)) {}
  // Devices taken from each value's node (its requested device; "" when it has none).
  explicit DistributedValues(std::vector<Output> values);

  int num_replicas() const { return static_cast<int>(values_.size()); }
  // Replica `replica`'s value and device; the index must be in range (checked).
  const Output& value(int replica) const;
  const std::string& device(int replica) const;
  const std::vector<Output>& values() const { return values_; }
  const std::vector<std::string>& devices() const { return devices_; }
  // Replica 0's value: what a cross-replica user of a Mirrored value reads.
  const Output& primary() const { return value(0); }
  DataType dtype() const { return values_.empty() ? DataType::kInvalid : values_[0].dtype(); }

  // OK for a well-formed value of one dtype; else InvalidArgument starting with `what` (e.g.
  // "Reduce: value") and naming the replica at fault.
  Status Validate(std::string_view what) const;

 private:
  std::vector<Output> values_;
  std::vector<std::string> devices_;
};

// Values that differ per replica.
class PerReplica final : public DistributedValues {
 public:
  using DistributedValues::DistributedValues;
};

// Values kept identical on every device.
class Mirrored final : public DistributedValues {
 public:
  using DistributedValues::DistributedValues;
};

// Canonical spelling of a device spec for comparisons ("/cpu:1" and "/device:CPU:1" agree); the
// spec itself when it does not parse.
std::string CanonicalDevice(std::string_view device);
// Both lists name the same devices in the same order (canonically).
bool SameDevices(const std::vector<std::string>& a, const std::vector<std::string>& b);

}  // namespace weft::distribute
