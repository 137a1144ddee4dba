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

// In-process targets, so that a client in the same process as a server (the parameter-server
// coordinator, whose server is the chief task) reaches its master without RPC: RegisterLocalMaster
// returns a target "local://<task>#<n>", unique in the process, that NewSession then serves with
// a ClusterSession over NewLocalMaster (the first registration installs that session factory).
// Unregister before the master is destroyed, and close the sessions first; a session made for a
// target that is gone is NotFound naming it. Thread-safe.
std::string RegisterLocalMaster(const std::string& task_name, Master* master);
void UnregisterLocalMaster(const std::string& target);

}  // namespace weft
