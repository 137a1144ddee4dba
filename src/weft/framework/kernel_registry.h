// KernelRegistry: (op, device type, dtype constraints) -> kernel factory. Filled explicitly by the
// kernels layer (one Register...Kernels function per family, listed in RegisterAllKernels); read
// by executors to build the kernel of each node. Register before use (not thread-safe); lookups
// are safe from any thread afterwards.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/framework/op_kernel.h"

namespace weft {

// Which nodes a kernel serves: op name, device type, and for some type attrs the allowed dtypes.
class KernelDef {
 public:
  KernelDef(std::string op, std::string device_type)
      : op_(std::move(op)), device_type_(std::move(device_type)) {}
  KernelDef& TypeConstraint(std::string attr, std::vector<DataType> allowed) {
    constraints_.emplace_back(std::move(attr), std::move(allowed));
    return *this;
  }
  template <typename T>
  KernelDef& TypeConstraint(std::string attr) {
    return TypeConstraint(std::move(attr), {DataTypeToEnum<T>::value});
  }

  const std::string& op() const { return op_; }
  const std::string& device_type() const { return device_type_; }
  const std::vector<std::pair<std::string, std::vector<DataType>>>& constraints() const {
    return constraints_;
  }
  std::string DebugString() const;

 private:
  std::string op_;
  std::string device_type_;
  std::vector<std::pair<std::string, std::vector<DataType>>> constraints_;
};

using KernelFactory =
    std::function<StatusOr<std::unique_ptr<OpKernel>>(OpKernelConstruction* context)>;

// A factory for kernel class K, whose constructor takes OpKernelConstruction* and reports errors
// through context->SetStatus().
template <typename K>
KernelFactory MakeKernelFactory() {
  return [](OpKernelConstruction* context) -> StatusOr<std::unique_ptr<OpKernel>> {
    auto kernel = std::make_unique<K>(context);
    if (!context->status().ok()) return context->status();
    return std::unique_ptr<OpKernel>(std::move(kernel));
  };
}

class KernelRegistry {
 public:
  KernelRegistry() = default;
  KernelRegistry(const KernelRegistry&) = delete;
  KernelRegistry& operator=(const KernelRegistry&) = delete;

  void Register(KernelDef def, KernelFactory factory);
  template <typename K>
  void Register(KernelDef def) {
    Register(std::move(def), MakeKernelFactory<K>());
  }

  // Registers every kernel of `from_device_type` for `to_device_type` too: a device whose memory
  // the CPU can address runs the CPU kernels (the test device of testing/test_arena_device.h).
  void CopyDeviceKernels(std::string_view from_device_type, const std::string& to_device_type);

  // Builds the kernel for `node` (attrs validated and defaulted) on `device`. NotFound naming the
  // node, op, device type and dtypes when no kernel matches; construction errors are returned.
  StatusOr<std::unique_ptr<OpKernel>> CreateKernel(const proto::NodeDef& node, const OpDef& op,
                                                   DeviceBase* device) const;
  // Whether some kernel would serve `node` on `device_type`.
  bool HasKernel(const proto::NodeDef& node, std::string_view device_type) const;

  // Every registered KernelDef, for listing and tests.
  std::vector<const KernelDef*> KernelDefs() const;

 private:
  struct Entry {
    KernelDef def;
    KernelFactory factory;
  };
  const Entry* FindEntry(const proto::NodeDef& node, std::string_view device_type) const;

  std::multimap<std::string, Entry, std::less<>> entries_;  // keyed by op name
};

}  // namespace weft
