// The explicit list of Weft's ops. Each family file defines one Register...Ops function; AllOps()
// returns the process-wide registry holding all of them, built on first use (thread-safe).
#pragma once

#include "weft/framework/op_registry.h"

namespace weft::ops {

void RegisterArrayOps(OpRegistry& registry);     // array_ops.cc
void RegisterMathOps(OpRegistry& registry);      // math_ops.cc
void RegisterNnOps(OpRegistry& registry);        // nn_ops.cc
void RegisterFunctionOps(OpRegistry& registry);  // function_ops.cc: _Arg, _Retval
void RegisterStateOps(OpRegistry& registry);     // state_ops.cc: resource variables
void RegisterRandomOps(OpRegistry& registry);    // random_ops.cc
void RegisterTrainingOps(OpRegistry& registry);  // training_ops.cc: optimizer updates
void RegisterSendRecvOps(OpRegistry& registry);  // sendrecv_ops.cc: _Send, _Recv (+ _Host)
void RegisterIoOps(OpRegistry& registry);        // io_ops.cc: SaveV2, RestoreV2
void RegisterDatasetOps(OpRegistry& registry);   // dataset_ops.cc: MakeIterator, IteratorGetNext
void RegisterCollectiveOps(
    OpRegistry& registry);  // collective_ops.cc: all-reduce, broadcast, all-gather

// Calls every Register...Ops function above.
void RegisterAllOps(OpRegistry& registry);

// The registry with every op of Weft, built once.
const OpRegistry& AllOps();

}  // namespace weft::ops
