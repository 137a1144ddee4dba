// LocalMaster: the blocking MasterInterface over an in-process Master, for a client in the same
// process as its master (no RPC). A RunStep honours the CallOptions: its deadline bounds the step
// and cancelling it cancels the step. Thread-safe; the Master must outlive it.
#pragma once

#include <memory>

#include "weft/distributed/master.h"
#include "weft/distributed/master_interface.h"

namespace weft {

std::unique_ptr<MasterInterface> NewLocalMaster(Master* master);

}  // namespace weft
