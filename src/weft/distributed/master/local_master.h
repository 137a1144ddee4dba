// LocalMaster: the blocking MasterInterface over an in-process Master, for a client in the same
// process as its master (no RPC). Every call honours its CallOptions: a RunStep's deadline bounds
// the step and cancelling it cancels the step; the other calls stop waiting at their deadline or
// cancellation (the Master finishes them on copies). Thread-safe; the Master must outlive it.
#pragma once

#include <memory>

#include "weft/distributed/master/master.h"
#include "weft/distributed/master/master_interface.h"

namespace weft {

std::unique_ptr<MasterInterface> NewLocalMaster(Master* master);

}  // namespace weft
