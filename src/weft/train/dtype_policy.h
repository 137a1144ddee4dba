// DTypePolicy: the reference's dtype policy (keras.mixed_precision.Policy): the type a model's
// layers compute in and the type their variables are kept in. "float32" computes and keeps
// everything in float32; "mixed_bfloat16" keeps variables, optimizer state, losses and softmax
// statistics in float32 and runs the layers' matrix products in bfloat16 (docs/transformers.md
// says which ops and why).
//
// A plain value; thread-safe to copy and read.
#pragma once

#include <string>
#include <string_view>

#include "weft/core/dtype.h"
#include "weft/core/statusor.h"

namespace weft::train {

struct DTypePolicy {
  // The policy named as in the reference: "float32" or "mixed_bfloat16". Another name is an
  // InvalidArgument listing these.
  static StatusOr<DTypePolicy> FromName(std::string_view name);

  std::string name = "float32";
  // What the layers' matrix products take and make.
  DataType compute_dtype = DataType::kFloat;
  // What the layers' weights are created as.
  DataType variable_dtype = DataType::kFloat;
};

}  // namespace weft::train
