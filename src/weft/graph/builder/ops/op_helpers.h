// Private helpers of the ops:: builder files.
#pragma once

#include "weft/graph/builder/node_builder.h"

namespace weft::ops {

// Finalizes `builder` and returns output 0 (empty after an error).
inline Output FirstOutput(NodeBuilder& builder) {
  Node* node = builder.Finalize();
  return node ? Output(node, 0) : Output();
}
inline Output FirstOutput(NodeBuilder&& builder) { return FirstOutput(builder); }

// Finalizes `builder` and returns its outputs 0 and 1 (empty after an error).
inline std::pair<Output, Output> TwoOutputs(NodeBuilder& builder) {
  Node* node = builder.Finalize();
  if (node == nullptr) return {};
  return {Output(node, 0), Output(node, 1)};
}

}  // namespace weft::ops
