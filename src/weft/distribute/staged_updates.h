// StageUpdates: the graph rewrite behind exactly-once input under ParameterServerStrategy. A
// training step's variable updates (optimizer applies, AssignAdd and kin) normally run on the ps
// tasks inside the step, so a step whose worker dies after one ps applied its share and before
// another did is half applied, and its rerun applies that share twice. Rewritten, the step only
// stages what its *commit side* reads on each device (_StageTensors, keyed by a commit id the step
// is fed), and a second run that touches only the ps tasks — issued by the coordinator once the
// step succeeded — takes those values (_UnstageTensors) and runs the commit side. The commit side
// is the updates and whatever both follows an update and leads to one (an optimizer's
// bookkeeping: Adam reads its powers after the updates and assigns them); a variable's handle is
// read where it is rather than staged. A step that failed is
// discarded instead, so each step's updates are applied once or not at all, whichever worker
// dies when. Stateless; the caller owns the graph and keeps it from other threads meanwhile.
#pragma once

#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/graph/graph.h"

namespace weft::distribute {

// What one device holding updates gets: a commit id to feed and the targets that commit or
// discard the step with that id there.
struct StagedUpdateGroup {
  std::string device;     // canonical
  std::string commit_id;  // int64 scalar Placeholder on `device`
  std::string commit;     // NoOp on `device`: every update of the device, on its staged inputs
  std::string discard;    // drops what the step with that commit id staged on `device`
};

struct StagedUpdates {
  std::string commit_id;  // int64 scalar Placeholder (no device) that the step is fed
  std::vector<StagedUpdateGroup> groups;  // one per device that holds updates, in device order
};

// Whether `node` changes a variable in place (what StageUpdates defers to the commit).
bool IsVariableUpdate(const Node& node);

// Rewrites the commit side of what `step` (a node of `graph`) depends on, data or control, as
// described above; `prefix` names the new nodes and the stages ("<prefix>/commit_id", ...). Only
// nodes with ids from `first_new_node` on (those not yet sent to a session) may be rewritten:
// FailedPrecondition names an older node, a node of the commit side without a device, one whose
// output the step reads, or one reading a computed resource; InvalidArgument when `step` is not
// in the graph or depends on no update.
StatusOr<StagedUpdates> StageUpdates(Graph& graph, const std::string& step, int first_new_node,
                                     const std::string& prefix);

}  // namespace weft::distribute
