// The explicit list of Weft's kernels. Each family defines one Register...Kernels function;
// AllKernels() returns the process-wide registry holding all of them, built on first use.
#pragma once

#include "weft/framework/kernel_registry.h"

namespace weft::kernels {

void RegisterArrayKernels(KernelRegistry& registry);     // array/
void RegisterMathKernels(KernelRegistry& registry);      // math/
void RegisterNnKernels(KernelRegistry& registry);        // nn/
void RegisterFunctionKernels(KernelRegistry& registry);  // function/: _Arg, _Retval
void RegisterIoKernels(KernelRegistry& registry);        // io/: SaveV2, RestoreV2
void RegisterDataKernels(KernelRegistry& registry);      // data/: MakeIterator, IteratorGetNext
void RegisterStateKernels(KernelRegistry& registry);     // state/: variables, random, optimizers
void RegisterSendRecvKernels(KernelRegistry& registry);  // sendrecv/: _Send, _Recv
void RegisterCollectiveKernels(
    KernelRegistry& registry);  // collective/: all-reduce, broadcast, all-gather

// Calls every Register...Kernels function above.
void RegisterAllKernels(KernelRegistry& registry);

// The registry with every kernel of Weft, built once (thread-safe).
const KernelRegistry& AllKernels();

}  // namespace weft::kernels
