#include "weft/distribute/input_context.h"

#include "weft/core/str_util.h"

namespace weft::distribute {

StatusOr<int64_t> InputContext::GetPerReplicaBatchSize(int64_t global_batch_size) const {
  if (global_batch_size <= 0 || global_batch_size % num_replicas_in_sync_ != 0) {
    return InvalidArgument("InputContext: the global batch size ", global_batch_size,
                           " is not a positive multiple of the ", num_replicas_in_sync_,
                           " replicas in sync");
  }
  return global_batch_size / num_replicas_in_sync_;
}

}  // namespace weft::distribute
