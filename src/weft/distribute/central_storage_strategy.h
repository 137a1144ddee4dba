// CentralStorageStrategy: synchronous data parallelism on one machine with every variable stored
// once, on the host's CPU, as the reference's strategy of that name. Computation is replicated
// on the compute devices (one replica each); each replica reads the variables from the host
// device, gradients are reduced onto it (ReductionToOneDevice) and every update is applied there
// once. Variables of synchronization kOnRead (a metric's totals, moving statistics) are kept per
// replica on the compute devices, as MirroredStrategy keeps them.
//
//   auto strategy = CentralStorageStrategy::Create({"/cpu:0", "/cpu:1"}).value();
//   Model model(...); model.Compile(..., {.strategy = strategy.get()});
//
// Thread-safe like Strategy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/distribute/strategy.h"

namespace weft::distribute {

class CentralStorageStrategy final : public Strategy {
 public:
  // `compute_devices`: one replica each; `variable_device`: where every variable lives (this
  // process's "/cpu:0" unless given). InvalidArgument for no compute device, a name that does not
  // parse, or a duplicate.
  static StatusOr<std::unique_ptr<CentralStorageStrategy>> Create(
      const std::vector<std::string>& compute_devices,
      const std::string& variable_device = "/cpu:0");

  // Canonical name of the device that stores the variables.
  const std::string& variable_device() const { return variable_device_; }

 private:
  CentralStorageStrategy(std::vector<std::string> compute_devices, std::string variable_device);

  const std::string variable_device_;
};

}  // namespace weft::distribute
