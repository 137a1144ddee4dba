// ClusterSession: a Session whose graph runs on a cluster, through the MasterService of one of its
// servers (GrpcSession is this over a gRPC MasterInterface). The master session is created with the
// first Create/Extend; each Run is one RunStep. Same interface and error codes as DirectSession, so
// code written for one runs unchanged on the other. Thread-safe.
#pragma once

#include <memory>

#include "weft/distributed/master/master_interface.h"
#include "weft/runtime/session.h"

namespace weft {

// `master` serves the session; `options.config` goes to CreateSession (its cluster_def, when set,
// tells the master where the workers are).
std::unique_ptr<Session> NewClusterSession(std::unique_ptr<MasterInterface> master,
                                           const SessionOptions& options);

}  // namespace weft
