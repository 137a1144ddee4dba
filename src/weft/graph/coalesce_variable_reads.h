// CoalesceVariableReads: a pass over a placed graph, run before partitioning, that lets the reads
// of variables one task sends another travel as one tensor. Each cross-task transfer is an RPC of
// its own every step, and a parameter-server step reads every dense variable of every ps task
// (docs/embeddings.md). Reads of one device bound for one device of another task, of one dtype
// and fully known shapes, that wait on the same control inputs are flattened and joined where they
// are read and cut back into their shapes where they are used. Because such reads have the same
// ancestors (their handles are made by ops without inputs), joining them cannot close a cycle.
// Stateless; not thread-safe for one graph.
#pragma once

#include "weft/core/statusor.h"
#include "weft/graph/graph.h"

namespace weft {

// Rewrites `graph` (every node assigned a device) in place; returns how many groups of two or more
// reads were joined. Errors name the node that could not be built (an internal fault).
StatusOr<int> CoalesceVariableReads(Graph* graph);

}  // namespace weft
