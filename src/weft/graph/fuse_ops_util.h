// What the fusion passes (fuse_ops.cc, fuse_bfloat16_ops.cc) share: input strings parsed, a
// GraphDef's producers and readers looked up, and the graph rewritten from a set of replacements.
// Internal to graph/; a Fuser reads the graph it was built on and must not outlive it.
#pragma once

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/graph.pb.h"

namespace weft::fusion {

// An input string split: "^name" (control), "name" or "name:index".
struct InputRef {
  std::string node;
  int index = 0;  // -1 for a malformed index, which matches no output
  bool control = false;
};
InputRef ParseInput(const std::string& input);

// Whether two input strings name the same tensor ("x" and "x:0" do).
bool SameTensor(const std::string& a, const std::string& b);

// `node`'s string attr `name`, or `fallback` when it has none.
std::string StringAttr(const proto::NodeDef& node, const std::string& name,
                       const std::string& fallback);

// Whether `node` is a Cast from `from` to `to`.
bool IsCast(const proto::NodeDef& node, DataType from, DataType to);

// Adds every control input of `chain`'s nodes (nulls skipped) to `fused`, once each.
void AddControlInputs(std::initializer_list<const proto::NodeDef*> chain, proto::NodeDef* fused);

// The readers of one tensor: those that read its values, and the Shape ops, which read only its
// shape (the gradients of Reshape keep one for each Reshape's input) and so survive a change of
// its type once their T says so.
struct Readers {
  std::vector<const proto::NodeDef*> values;
  std::vector<const proto::NodeDef*> shapes;
};

// Who produces and who reads what in one GraphDef.
class Fuser {
 public:
  explicit Fuser(const proto::GraphDef* graph);

  // The node producing data input 0 of `node` when that input is output 0 of a node of op `op`
  // read by `node` alone (and by no control edge), else null.
  const proto::NodeDef* SoleProducer(const proto::NodeDef& node, std::string_view op) const;
  // The node named by `input`, if the graph has it.
  const proto::NodeDef* Producer(const std::string& input) const;
  // The nodes reading `input` (an input string: "x" or "x:1") as data, in graph order.
  std::vector<const proto::NodeDef*> Consumers(const std::string& input) const;
  Readers ReadersOf(const std::string& input) const;
  bool ControlConsumed(const proto::NodeDef& node) const;
  // Whether `node`'s output 0 has exactly one consumer, a node of op `op`.
  bool FeedsOnly(const proto::NodeDef& node, std::string_view op) const;

 private:
  const proto::GraphDef* graph_;
  std::map<std::string, int> index_;
  std::map<std::pair<std::string, int>, std::vector<int>> consumers_;
  std::set<std::string> control_consumed_;
};

// What a pass changes: nodes removed, nodes standing in for the node of their name, and nodes
// inserted before the node of a name.
struct Rewrites {
  std::set<std::string> removed;
  std::map<std::string, proto::NodeDef> replaced;
  std::map<std::string, proto::NodeDef> inserted;
  bool Claimed(const std::string& name) const {
    return removed.count(name) > 0 || replaced.count(name) > 0;
  }
};
// Applies `rewrites` to `graph` (consuming their nodes).
void RewriteGraph(Rewrites& rewrites, proto::GraphDef* graph);

// A copy of `shape` (a Shape op) reading `input` of type `dtype` instead.
proto::NodeDef ReadShapeOf(const proto::NodeDef& shape, const std::string& input, DataType dtype);

}  // namespace weft::fusion
