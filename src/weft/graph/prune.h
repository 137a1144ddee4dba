// Building the graph of one step: keep only what the fetches and targets need, replace each fed
// tensor by an _Arg node and read each fetched tensor through a _Retval node, so a CallFrame
// carries feeds in and fetches out (argument i = feeds[i], return value i = fetches[i]). Names that
// do not resolve are errors naming the feed, fetch or target. StepSignatureKey names a signature
// for the caches of built steps (DirectSession, MasterSession). Stateless.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/graph/graph.h"

namespace weft {

struct StepSignature {
  std::vector<std::string> feeds;    // tensor names, "node" or "node:index"
  std::vector<std::string> fetches;  // tensor names
  std::vector<std::string> targets;  // node names, run for their effects
};

// A key that tells signatures apart: equal exactly when the three lists are equal, order included
// (feeds[i] is argument i of the step built for it), whatever characters the names hold. Readable
// in a log: each name appears as <length>:<name>, as in "3:x:0->3:y:0/4:step". A caller whose
// orderings of one set should share a step sorts the lists first.
std::string StepSignatureKey(const StepSignature& signature);

// Checks every name of `signature` against `graph`: feeds and fetches must name existing outputs,
// targets existing nodes, and no tensor may be fed twice.
Status ValidateStepSignature(const Graph& graph, const StepSignature& signature);

// The pruned graph for `signature` over `graph`'s registry. Nodes keep their requested and
// assigned devices; _Arg and _Retval nodes take the device of the tensor they stand for.
StatusOr<std::unique_ptr<Graph>> BuildStepGraph(const Graph& graph, const StepSignature& signature);

}  // namespace weft
