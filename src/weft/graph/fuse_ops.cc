// See fuse_ops.h. The convolution, MatMul and pooling patterns are here; mixed precision's are in
// fuse_bfloat16_ops.cc.
#include "weft/graph/fuse_ops.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "weft/graph/fuse_bfloat16_ops.h"
#include "weft/graph/fuse_ops_util.h"

namespace weft {
namespace {

using fusion::AddControlInputs;
using fusion::Fuser;
using fusion::IsCast;
using fusion::Rewrites;

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

// The fused node standing for MaxPoolGrad -> ReluGrad, named like the ReluGrad.
proto::NodeDef MakeFusedPoolGrad(const proto::NodeDef& pool_grad, const proto::NodeDef& relu_grad) {
  proto::NodeDef fused;
  fused.set_name(relu_grad.name());
  fused.set_op("_FusedMaxPoolGrad");
  fused.set_device(relu_grad.device());
  for (int i = 0; i < 3; ++i) fused.add_input(pool_grad.input(i));
  AddControlInputs({&pool_grad, &relu_grad}, &fused);
  *fused.mutable_attr() = pool_grad.attr();
  (*fused.mutable_attr())["activation"].set_s("Relu");
  return fused;
}

// Adds `fused` (standing for the node of its name, with `absorbed` gone; nulls skipped) when
// `kernels` has a kernel for it.
bool Replace(const KernelRegistry& kernels, std::string_view device_type, proto::NodeDef fused,
             std::initializer_list<const proto::NodeDef*> absorbed, Rewrites* rewrites) {
  if (!kernels.HasKernel(fused, device_type)) return false;  // e.g. integer MatMul
  for (const proto::NodeDef* node : absorbed) {
    if (node != nullptr) rewrites->removed.insert(node->name());
  }
  rewrites->replaced[fused.name()] = std::move(fused);
  return true;
}

// ReluGrad of a max pool's gradient, where the features are the pooled Relu output.
bool FusePoolGrad(const Fuser& fuser, const KernelRegistry& kernels, std::string_view device_type,
                  const proto::NodeDef& relu_grad, Rewrites* rewrites) {
  if (relu_grad.input_size() < 2) return false;
  const proto::NodeDef* pool_grad = fuser.SoleProducer(relu_grad, "MaxPoolGrad");
  if (pool_grad == nullptr || pool_grad->input_size() < 3 ||
      !fusion::SameTensor(relu_grad.input(1), pool_grad->input(0))) {
    return false;
  }
  return Replace(kernels, device_type, MakeFusedPoolGrad(*pool_grad, relu_grad), {pool_grad},
                 rewrites);
}

// A bfloat16 product widened at once, not followed by a BiasAdd (fused from there).
bool FuseWidenedProduct(const Fuser& fuser, const KernelRegistry& kernels,
                        std::string_view device_type, const proto::NodeDef& widen,
                        Rewrites* rewrites) {
  if (fuser.FeedsOnly(widen, "BiasAdd")) return false;
  const proto::NodeDef* matmul = fuser.SoleProducer(widen, "MatMul");
  if (matmul == nullptr || matmul->input_size() < 2) return false;
  return Replace(kernels, device_type, fusion::MakeFusedBFloat16(*matmul, widen, nullptr, nullptr),
                 {matmul}, rewrites);
}

// producer -> BiasAdd (-> Relu), the producer a Conv2D, a MatMul or a widened bfloat16 MatMul.
bool FuseBiasAdd(const Fuser& fuser, const KernelRegistry& kernels, std::string_view device_type,
                 const proto::NodeDef& node, Rewrites* rewrites) {
  const proto::NodeDef* relu = nullptr;
  const proto::NodeDef* bias_add = nullptr;
  if (node.op() == "Relu") {
    relu = &node;
    bias_add = fuser.SoleProducer(node, "BiasAdd");
  } else if (node.op() == "BiasAdd" && !fuser.FeedsOnly(node, "Relu")) {
    bias_add = &node;  // a BiasAdd feeding a lone Relu is fused from that Relu
  }
  if (bias_add == nullptr || bias_add->input_size() < 2 ||
      fusion::StringAttr(*bias_add, "data_format", "NHWC") != "NHWC") {
    return false;
  }
  const proto::NodeDef* absorbed_bias_add = relu != nullptr ? bias_add : nullptr;
  const proto::NodeDef* widen = fuser.SoleProducer(*bias_add, "Cast");
  if (widen != nullptr && IsCast(*widen, DataType::kBFloat16, DataType::kFloat)) {
    const proto::NodeDef* matmul = fuser.SoleProducer(*widen, "MatMul");
    if (matmul == nullptr || matmul->input_size() < 2) return false;
    return Replace(kernels, device_type, fusion::MakeFusedBFloat16(*matmul, *widen, bias_add, relu),
                   {matmul, widen, absorbed_bias_add}, rewrites);
  }
  const proto::NodeDef* producer = fuser.SoleProducer(*bias_add, "Conv2D");
  if (producer == nullptr) producer = fuser.SoleProducer(*bias_add, "MatMul");
  if (producer == nullptr || producer->input_size() < 2) return false;
  return Replace(kernels, device_type, MakeFused(*producer, *bias_add, relu),
                 {producer, absorbed_bias_add}, rewrites);
}

}  // namespace

int FuseOps(const KernelRegistry& kernels, std::string_view device_type, proto::GraphDef* graph) {
  // Once per Reshape between a result and its rounding (a Dense layer unflattens its output and
  // the next flattens it again); a bound, not a loop over input.
  for (int pass = 0; pass < 4 && fusion::HoistRoundingCasts(graph) > 0; ++pass) {
  }
  const Fuser fuser(graph);
  Rewrites rewrites;
  int fused = 0;
  for (const proto::NodeDef& node : graph->node()) {
    if (fusion::FuseRounding(fuser, kernels, device_type, node, &rewrites, &fused)) continue;
    bool did = false;
    if (node.op() == "ReluGrad") {
      did = FusePoolGrad(fuser, kernels, device_type, node, &rewrites);
    } else if (IsCast(node, DataType::kBFloat16, DataType::kFloat)) {
      did = FuseWidenedProduct(fuser, kernels, device_type, node, &rewrites);
    } else {
      did = FuseBiasAdd(fuser, kernels, device_type, node, &rewrites);
    }
    if (did) ++fused;
  }
  if (fused > 0) fusion::RewriteGraph(rewrites, graph);
  return fused;
}

}  // namespace weft
