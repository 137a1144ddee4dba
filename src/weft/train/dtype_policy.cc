// The dtype policies Weft knows, by the reference's names.
#include "weft/train/dtype_policy.h"

namespace weft::train {

StatusOr<DTypePolicy> DTypePolicy::FromName(std::string_view name) {
  if (name == "float32") return DTypePolicy{};
  if (name == "mixed_bfloat16") {
    return DTypePolicy{.name = "mixed_bfloat16",
                       .compute_dtype = DataType::kBFloat16,
                       .variable_dtype = DataType::kFloat};
  }
  return InvalidArgument("unknown dtype policy '", name,
                         "': expected \"float32\" or \"mixed_bfloat16\"");
}

}  // namespace weft::train
