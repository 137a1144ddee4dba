// Reading GraphDefs into Graphs. ImportGraphDef accepts nodes in any order, resolves input names,
// and reports — naming the node — unknown ops, bad attrs, inputs that name no node or a missing
// output, dtype mismatches, shape errors, duplicate names and cycles. Stateless.
#pragma once

#include <string_view>

#include "weft/graph/graph.h"

namespace weft {

// Adds every node of `graph_def` to `graph`, which may already hold nodes (for Session::Extend):
// new nodes may use existing ones as inputs. On error `graph` may hold a prefix of the new nodes;
// callers that need all-or-nothing import into a copy.
Status ImportGraphDef(const proto::GraphDef& graph_def, Graph* graph);

// Parses serialized GraphDef bytes; InvalidArgument when they are not a GraphDef.
StatusOr<proto::GraphDef> ParseGraphDef(std::string_view bytes);

// Copies `source` into a new graph over the same registry.
StatusOr<std::unique_ptr<Graph>> CopyGraph(const Graph& source);

}  // namespace weft
