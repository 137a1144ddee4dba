// See fuse_ops.h.
#include "weft/graph/fuse_ops.h"

#include <charconv>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace weft {
namespace {

// An input string split: "^name" (control), "name" or "name:index".
struct InputRef {
  std::string node;
  int index = 0;
  bool control = false;
};

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

std::string StringAttr(const proto::NodeDef& node, const std::string& name,
                       const std::string& fallback) {
  auto it = node.attr().find(name);
  return it == node.attr().end() ? fallback : it->second.s();
}

class Fuser {
 public:
  explicit Fuser(proto::GraphDef* graph) : graph_(graph) {
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

  // The node producing data input 0 of `node` when that input is output 0 of a node of op `op`
  // read by `node` alone (and by no control edge), else null.
  const proto::NodeDef* SoleProducer(const proto::NodeDef& node, std::string_view op) const {
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

  // Whether `node`'s output 0 has exactly one consumer, a node of op `op`.
  bool FeedsOnly(const proto::NodeDef& node, std::string_view op) const {
    if (control_consumed_.count(node.name()) > 0) return false;
    auto consumers = consumers_.find({node.name(), 0});
    return consumers != consumers_.end() && consumers->second.size() == 1 &&
           graph_->node(consumers->second[0]).op() == op;
  }

 private:
  proto::GraphDef* graph_;
  std::map<std::string, int> index_;
  std::map<std::pair<std::string, int>, std::vector<int>> consumers_;
  std::set<std::string> control_consumed_;
};

// Adds every control input of `chain`'s nodes (nulls skipped) to `fused`, once each.
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

// The fused node standing for producer -> bias_add (-> relu), named like the chain's last node.
proto::NodeDef MakeFused(const proto::NodeDef& producer, const proto::NodeDef& bias_add,
                         const proto::NodeDef* relu) {
  const proto::NodeDef& last = relu != nullptr ? *relu : bias_add;
  proto::NodeDef fused;
  fused.set_name(last.name());
  fused.set_op(producer.op() == "Conv2D" ? "_FusedConv2D" : "_FusedMatMul");
  fused.set_device(last.device());
  fused.add_input(producer.input(0));
  fused.add_input(producer.input(1));
  fused.add_input(bias_add.input(1));
  AddControlInputs({&producer, &bias_add, relu}, &fused);
  *fused.mutable_attr() = producer.attr();
  (*fused.mutable_attr())["activation"].set_s(relu != nullptr ? "Relu" : "None");
  return fused;
}

// Whether `node` is a Cast from `from` to `to`.
bool IsCast(const proto::NodeDef& node, DataType from, DataType to) {
  if (node.op() != "Cast") return false;
  auto src = node.attr().find("SrcT");
  auto dst = node.attr().find("DstT");
  return src != node.attr().end() && dst != node.attr().end() &&
         static_cast<DataType>(src->second.type()) == from &&
         static_cast<DataType>(dst->second.type()) == to;
}

// The _FusedBFloat16MatMul standing for matmul -> widen (-> bias_add (-> relu)), named like the
// chain's last node.
proto::NodeDef MakeFusedBFloat16(const proto::NodeDef& matmul, const proto::NodeDef& widen,
                                 const proto::NodeDef* bias_add, const proto::NodeDef* relu) {
  const proto::NodeDef& last = relu != nullptr ? *relu : bias_add != nullptr ? *bias_add : widen;
  proto::NodeDef fused;
  fused.set_name(last.name());
  fused.set_op("_FusedBFloat16MatMul");
  fused.set_device(last.device());
  fused.add_input(matmul.input(0));
  fused.add_input(matmul.input(1));
  if (bias_add != nullptr) fused.add_input(bias_add->input(1));
  AddControlInputs({&matmul, &widen, bias_add, relu}, &fused);
  auto& attrs = *fused.mutable_attr();
  for (const char* name : {"transpose_a", "transpose_b"}) {
    auto it = matmul.attr().find(name);
    if (it != matmul.attr().end()) attrs[name] = it->second;
  }
  attrs["num_bias"].set_i(bias_add != nullptr ? 1 : 0);
  attrs["activation"].set_s(relu != nullptr ? "Relu" : "None");
  return fused;
}

// Whether two input strings name the same tensor ("x" and "x:0" do).
bool SameTensor(const std::string& a, const std::string& b) {
  const InputRef x = ParseInput(a), y = ParseInput(b);
  return !x.control && !y.control && x.node == y.node && x.index == y.index && x.index >= 0;
}

// The fused node standing for MaxPoolGrad -> ReluGrad, named like the ReluGrad.
proto::NodeDef MakeFusedPoolGrad(const proto::NodeDef& pool_grad, const proto::NodeDef& relu_grad) {
  proto::NodeDef fused;
  fused.set_name(relu_grad.name());
  fused.set_op("_FusedMaxPoolGrad");
  fused.set_device(relu_grad.device());
  for (int i = 0; i < 3; ++i) fused.add_input(pool_grad.input(i));
  std::set<std::string> controls;
  for (const proto::NodeDef* node : {&pool_grad, &relu_grad}) {
    for (const std::string& input : node->input()) {
      if (!input.empty() && input[0] == '^' && controls.insert(input).second) {
        fused.add_input(input);
      }
    }
  }
  *fused.mutable_attr() = pool_grad.attr();
  (*fused.mutable_attr())["activation"].set_s("Relu");
  return fused;
}

}  // namespace

int FuseOps(const KernelRegistry& kernels, std::string_view device_type, proto::GraphDef* graph) {
  const Fuser fuser(graph);
  std::map<std::string, proto::NodeDef> replaced;  // by the name of the chain's last node
  std::set<std::string> removed;
  for (const proto::NodeDef& node : graph->node()) {
    // ReluGrad of a max pool's gradient, where the features are the pooled Relu output.
    if (node.op() == "ReluGrad" && node.input_size() >= 2) {
      const proto::NodeDef* pool_grad = fuser.SoleProducer(node, "MaxPoolGrad");
      if (pool_grad != nullptr && pool_grad->input_size() >= 3 &&
          SameTensor(node.input(1), pool_grad->input(0))) {
        proto::NodeDef fused = MakeFusedPoolGrad(*pool_grad, node);
        if (kernels.HasKernel(fused, device_type)) {
          removed.insert(pool_grad->name());
          replaced[fused.name()] = std::move(fused);
        }
      }
      continue;
    }
    // A bfloat16 product widened at once, not followed by a BiasAdd (fused from there).
    if (IsCast(node, DataType::kBFloat16, DataType::kFloat) && !fuser.FeedsOnly(node, "BiasAdd")) {
      const proto::NodeDef* matmul = fuser.SoleProducer(node, "MatMul");
      if (matmul != nullptr && matmul->input_size() >= 2) {
        proto::NodeDef fused = MakeFusedBFloat16(*matmul, node, nullptr, nullptr);
        if (kernels.HasKernel(fused, device_type)) {
          removed.insert(matmul->name());
          replaced[fused.name()] = std::move(fused);
        }
      }
      continue;
    }
    const proto::NodeDef* relu = nullptr;
    const proto::NodeDef* bias_add = nullptr;
    if (node.op() == "Relu") {
      relu = &node;
      bias_add = fuser.SoleProducer(node, "BiasAdd");
    } else if (node.op() == "BiasAdd" && !fuser.FeedsOnly(node, "Relu")) {
      bias_add = &node;  // a BiasAdd feeding a lone Relu is fused from that Relu
    }
    if (bias_add == nullptr || bias_add->input_size() < 2 ||
        StringAttr(*bias_add, "data_format", "NHWC") != "NHWC") {
      continue;
    }
    const proto::NodeDef* widen = fuser.SoleProducer(*bias_add, "Cast");
    if (widen != nullptr && IsCast(*widen, DataType::kBFloat16, DataType::kFloat)) {
      const proto::NodeDef* matmul = fuser.SoleProducer(*widen, "MatMul");
      if (matmul == nullptr || matmul->input_size() < 2) continue;
      proto::NodeDef fused = MakeFusedBFloat16(*matmul, *widen, bias_add, relu);
      if (!kernels.HasKernel(fused, device_type)) continue;
      removed.insert({matmul->name(), widen->name()});
      if (relu != nullptr) removed.insert(bias_add->name());
      replaced[fused.name()] = std::move(fused);
      continue;
    }
    const proto::NodeDef* producer = fuser.SoleProducer(*bias_add, "Conv2D");
    if (producer == nullptr) producer = fuser.SoleProducer(*bias_add, "MatMul");
    if (producer == nullptr || producer->input_size() < 2) continue;
    proto::NodeDef fused = MakeFused(*producer, *bias_add, relu);
    if (!kernels.HasKernel(fused, device_type)) continue;  // e.g. integer MatMul
    removed.insert(producer->name());
    if (relu != nullptr) removed.insert(bias_add->name());
    replaced[fused.name()] = std::move(fused);
  }
  if (replaced.empty()) return 0;
  proto::GraphDef rewritten;
  rewritten.set_version(graph->version());
  for (proto::NodeDef& node : *graph->mutable_node()) {
    if (removed.count(node.name()) > 0) continue;
    auto it = replaced.find(node.name());
    *rewritten.add_node() = it != replaced.end() ? std::move(it->second) : std::move(node);
  }
  const int fused = static_cast<int>(replaced.size());
  *graph = std::move(rewritten);
  return fused;
}

}  // namespace weft
