// Checks a NodeDef against its OpDef and derives what the op signature implies: default attrs,
// input and output dtypes (with "N * T" lists expanded), and the parsing of input names
// ("x", "x:1", "^x"). Every error names the node and its op. Stateless; safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "weft/core/allocator.h"
#include "weft/framework/op_def.h"
#include "weft/graph.pb.h"

namespace weft {

// "node 'name' (Op)", used as the prefix of every error about a node.
std::string FormatNodeForError(const proto::NodeDef& node);

// A tensor named by "node:index"; index -1 marks a control input "^node".
struct TensorId {
  std::string_view node;
  int index = 0;
  bool is_control() const { return index < 0; }
};
// Parses "node", "node:3" or "^node"; InvalidArgument for an empty node or a bad index.
StatusOr<TensorId> ParseTensorName(std::string_view name);

// Adds the OpDef's default value for every attr the node leaves unset.
void AddDefaultsToNodeDef(const OpDef& op, proto::NodeDef* node);

// Checks that every attr of the op is present with the right kind and an allowed value, that no
// unknown attr is set (attrs starting with '_' are reserved for the runtime and allowed), and that
// the number of data inputs matches the signature with control inputs last. Defaults must have
// been added.
Status ValidateNodeDef(const proto::NodeDef& node, const OpDef& op);

// The dtype of each data input and output of `node`, with list args expanded.
Status InOutTypesForNode(const proto::NodeDef& node, const OpDef& op,
                         std::vector<DataType>* input_types, std::vector<DataType>* output_types);

// Where each data input and output of `node` lives when it runs on a device with memory of its own
// (on a host-memory device everything is in host memory): kHost for args marked HostMemory and for
// resource handles, kDevice for the rest. List args expanded as in InOutTypesForNode.
Status MemoryTypesForNode(const proto::NodeDef& node, const OpDef& op,
                          std::vector<MemoryType>* input_types,
                          std::vector<MemoryType>* output_types);

}  // namespace weft
