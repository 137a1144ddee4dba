// See fuse_ops_util.h.
#include "weft/graph/fuse_ops_util.h"

#include <charconv>

namespace weft::fusion {

InputRef ParseInput(const std::string& input) {
  InputRef ref;
  if (!input.empty() && input[0] == '^') {
    ref.node = input.substr(1);
    ref.control = true;
    return ref;
  }
  const size_t colon = input.rfind(':');
  if (colon == std::string::npos) {
    ref.node = input;
    return ref;
  }
  ref.node = input.substr(0, colon);
  // A malformed index (the GraphDef may come off the wire) matches no output: nothing fuses.
  const char* begin = input.data() + colon + 1;
  const char* end = input.data() + input.size();
  if (std::from_chars(begin, end, ref.index).ptr != end) ref.index = -1;
  return ref;
}

bool SameTensor(const std::string& a, const std::string& b) {
  const InputRef x = ParseInput(a), y = ParseInput(b);
  return !x.control && !y.control && x.node == y.node && x.index == y.index && x.index >= 0;
}

std::string StringAttr(const proto::NodeDef& node, const std::string& name,
                       const std::string& fallback) {
  auto it = node.attr().find(name);
  return it == node.attr().end() ? fallback : it->second.s();
}

bool IsCast(const proto::NodeDef& node, DataType from, DataType to) {
  if (node.op() != "Cast") return false;
  auto src = node.attr().find("SrcT");
  auto dst = node.attr().find("DstT");
  return src != node.attr().end() && dst != node.attr().end() &&
         static_cast<DataType>(src->second.type()) == from &&
         static_cast<DataType>(dst->second.type()) == to;
}

void AddControlInputs(std::initializer_list<const proto::NodeDef*> chain, proto::NodeDef* fused) {
  std::set<std::string> controls;
  for (const proto::NodeDef* node : chain) {
    if (node == nullptr) continue;
    for (const std::string& input : node->input()) {
      if (!input.empty() && input[0] == '^' && controls.insert(input).second) {
        fused->add_input(input);
      }
    }
  }
}

Fuser::Fuser(const proto::GraphDef* graph) : graph_(graph) {
  for (int i = 0; i < graph->node_size(); ++i) {
    const proto::NodeDef& node = graph->node(i);
    index_[node.name()] = i;
    for (const std::string& input : node.input()) {
      const InputRef ref = ParseInput(input);
      if (ref.control) {
        control_consumed_.insert(ref.node);
      } else {
        consumers_[{ref.node, ref.index}].push_back(i);
      }
    }
  }
}

const proto::NodeDef* Fuser::SoleProducer(const proto::NodeDef& node, std::string_view op) const {
  if (node.input_size() == 0) return nullptr;
  const InputRef ref = ParseInput(node.input(0));
  if (ref.control || ref.index != 0) return nullptr;
  auto it = index_.find(ref.node);
  if (it == index_.end()) return nullptr;
  const proto::NodeDef& producer = graph_->node(it->second);
  if (producer.op() != op || control_consumed_.count(producer.name()) > 0) return nullptr;
  auto consumers = consumers_.find({producer.name(), 0});
  if (consumers == consumers_.end() || consumers->second.size() != 1) return nullptr;
  return &producer;
}

const proto::NodeDef* Fuser::Producer(const std::string& input) const {
  auto it = index_.find(ParseInput(input).node);
  return it == index_.end() ? nullptr : &graph_->node(it->second);
}

std::vector<const proto::NodeDef*> Fuser::Consumers(const std::string& input) const {
  std::vector<const proto::NodeDef*> nodes;
  const InputRef ref = ParseInput(input);
  auto it = consumers_.find({ref.node, ref.index});
  if (ref.control || it == consumers_.end()) return nodes;
  for (int i : it->second) nodes.push_back(&graph_->node(i));
  return nodes;
}

Readers Fuser::ReadersOf(const std::string& input) const {
  Readers readers;
  for (const proto::NodeDef* node : Consumers(input)) {
    (node->op() == "Shape" ? readers.shapes : readers.values).push_back(node);
  }
  return readers;
}

bool Fuser::ControlConsumed(const proto::NodeDef& node) const {
  return control_consumed_.count(node.name()) > 0;
}

bool Fuser::FeedsOnly(const proto::NodeDef& node, std::string_view op) const {
  if (control_consumed_.count(node.name()) > 0) return false;
  auto consumers = consumers_.find({node.name(), 0});
  return consumers != consumers_.end() && consumers->second.size() == 1 &&
         graph_->node(consumers->second[0]).op() == op;
}

void RewriteGraph(Rewrites& rewrites, proto::GraphDef* graph) {
  proto::GraphDef rewritten;
  rewritten.set_version(graph->version());
  for (proto::NodeDef& node : *graph->mutable_node()) {
    auto before = rewrites.inserted.find(node.name());
    if (before != rewrites.inserted.end()) *rewritten.add_node() = std::move(before->second);
    if (rewrites.removed.count(node.name()) > 0) continue;
    auto it = rewrites.replaced.find(node.name());
    *rewritten.add_node() = it != rewrites.replaced.end() ? std::move(it->second) : std::move(node);
  }
  *graph = std::move(rewritten);
}

proto::NodeDef ReadShapeOf(const proto::NodeDef& shape, const std::string& input, DataType dtype) {
  proto::NodeDef copy = shape;
  copy.set_input(0, input);
  (*copy.mutable_attr())["T"].set_type(static_cast<proto::DataType>(dtype));
  return copy;
}

}  // namespace weft::fusion
