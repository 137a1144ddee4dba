// See fuse_bfloat16_ops.h.
#include "weft/graph/fuse_bfloat16_ops.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weft::fusion {
namespace {

bool IsRounding(const proto::NodeDef& node) {
  return IsCast(node, DataType::kFloat, DataType::kBFloat16);
}

// An Identity of `input` (of `dtype`) in `node`'s place: its name, device and control inputs.
proto::NodeDef ForwardInPlaceOf(const proto::NodeDef& node, const std::string& input,
                                DataType dtype) {
  proto::NodeDef identity;
  identity.set_name(node.name());
  identity.set_op("Identity");
  identity.set_device(node.device());
  identity.add_input(input);
  for (const std::string& control : node.input()) {
    if (!control.empty() && control[0] == '^') identity.add_input(control);
  }
  (*identity.mutable_attr())["T"].set_type(static_cast<proto::DataType>(dtype));
  return identity;
}

// Whether none of `nodes` is already removed or replaced by another fusion.
bool Unclaimed(const Rewrites& rewrites, const std::vector<const proto::NodeDef*>& nodes) {
  return std::none_of(nodes.begin(), nodes.end(),
                      [&](const proto::NodeDef* node) { return rewrites.Claimed(node->name()); });
}

// Points `shapes` (Shape ops) at `input`, now of bfloat16.
void ReadShapesOf(const std::vector<const proto::NodeDef*>& shapes, const std::string& input,
                  Rewrites* rewrites) {
  for (const proto::NodeDef* shape : shapes) {
    rewrites->replaced[shape->name()] = ReadShapeOf(*shape, input, DataType::kBFloat16);
  }
}

// gelu -> round (a Cast to bfloat16 read by nothing else) as _FusedGelu under the Cast's name.
bool FuseGelu(const Fuser& fuser, const KernelRegistry& kernels, std::string_view device_type,
              const proto::NodeDef& round, Rewrites* rewrites) {
  if (round.input_size() < 1 || ParseInput(round.input(0)).index != 0) return false;
  const proto::NodeDef* gelu = fuser.Producer(round.input(0));
  if (gelu == nullptr || gelu->op() != "Gelu" || gelu->input_size() < 1 ||
      fuser.ControlConsumed(*gelu)) {
    return false;
  }
  const Readers readers = fuser.ReadersOf(gelu->name());
  if (readers.values.size() != 1 || !Unclaimed(*rewrites, {gelu, &round}) ||
      !Unclaimed(*rewrites, readers.shapes)) {
    return false;
  }
  proto::NodeDef fused;
  fused.set_name(round.name());
  fused.set_op("_FusedGelu");
  fused.set_device(round.device());
  fused.add_input(gelu->input(0));
  AddControlInputs({gelu, &round}, &fused);
  auto approximate = gelu->attr().find("approximate");
  if (approximate != gelu->attr().end()) {
    (*fused.mutable_attr())["approximate"] = approximate->second;
  }
  if (!kernels.HasKernel(fused, device_type)) return false;
  rewrites->removed.insert(gelu->name());
  ReadShapesOf(readers.shapes, round.name(), rewrites);
  rewrites->replaced[round.name()] = std::move(fused);
  return true;
}

// A float32 FusedLayerNorm whose y only Casts to bfloat16 (and Shape ops) read, as _FusedLayerNorm
// under its name; the Casts become Identities of its y.
bool FuseLayerNorm(const Fuser& fuser, const KernelRegistry& kernels, std::string_view device_type,
                   const proto::NodeDef& norm, Rewrites* rewrites) {
  auto type = norm.attr().find("T");
  if (type == norm.attr().end() || static_cast<DataType>(type->second.type()) != DataType::kFloat ||
      fuser.ControlConsumed(norm)) {
    return false;
  }
  const Readers readers = fuser.ReadersOf(norm.name());
  if (readers.values.empty() ||
      !std::all_of(readers.values.begin(), readers.values.end(),
                   [](const proto::NodeDef* node) { return IsRounding(*node); }) ||
      !Unclaimed(*rewrites, readers.values) || !Unclaimed(*rewrites, readers.shapes) ||
      rewrites->Claimed(norm.name())) {
    return false;
  }
  proto::NodeDef fused = norm;
  fused.set_op("_FusedLayerNorm");
  fused.mutable_attr()->erase("T");
  if (!kernels.HasKernel(fused, device_type)) return false;
  for (const proto::NodeDef* round : readers.values) {
    rewrites->replaced[round->name()] = ForwardInPlaceOf(*round, norm.name(), DataType::kBFloat16);
  }
  ReadShapesOf(readers.shapes, norm.name(), rewrites);
  rewrites->replaced[norm.name()] = std::move(fused);
  return true;
}

// A BiasAddGrad whose float32 input a Cast to bfloat16 also reads, as _FusedBiasAddGrad under the
// Cast's name (its output 0 is what the Cast gave), taking over the GeluGrad producing that input
// when only those two read it; the BiasAddGrad becomes an Identity of output 1.
bool FuseBiasAddGrad(const Fuser& fuser, const KernelRegistry& kernels,
                     std::string_view device_type, const proto::NodeDef& bias_grad,
                     Rewrites* rewrites) {
  if (bias_grad.input_size() < 1 || StringAttr(bias_grad, "data_format", "NHWC") != "NHWC") {
    return false;
  }
  const std::string& gradient = bias_grad.input(0);
  const Readers readers = fuser.ReadersOf(gradient);
  auto round = std::find_if(readers.values.begin(), readers.values.end(),
                            [](const proto::NodeDef* node) { return IsRounding(*node); });
  if (round == readers.values.end() || !Unclaimed(*rewrites, {*round, &bias_grad})) return false;
  proto::NodeDef fused;
  fused.set_name((*round)->name());
  fused.set_op("_FusedBiasAddGrad");
  fused.set_device((*round)->device());
  auto& attrs = *fused.mutable_attr();
  const proto::NodeDef* gelu_grad = fuser.Producer(gradient);
  const bool take_gelu_grad =
      gelu_grad != nullptr && gelu_grad->op() == "GeluGrad" && gelu_grad->input_size() >= 2 &&
      ParseInput(gradient).index == 0 && readers.values.size() == 2 && readers.shapes.empty() &&
      !fuser.ControlConsumed(*gelu_grad) && !rewrites->Claimed(gelu_grad->name());
  if (take_gelu_grad) {
    fused.add_input(gelu_grad->input(0));
    fused.add_input(gelu_grad->input(1));
    attrs["num_features"].set_i(1);
    attrs["activation"].set_s("Gelu");
    auto approximate = gelu_grad->attr().find("approximate");
    if (approximate != gelu_grad->attr().end()) attrs["approximate"] = approximate->second;
  } else {
    fused.add_input(gradient);
    attrs["num_features"].set_i(0);
    attrs["activation"].set_s("None");
  }
  AddControlInputs({take_gelu_grad ? gelu_grad : nullptr, *round, &bias_grad}, &fused);
  if (!kernels.HasKernel(fused, device_type)) return false;
  if (take_gelu_grad) rewrites->removed.insert(gelu_grad->name());
  rewrites->replaced[bias_grad.name()] =
      ForwardInPlaceOf(bias_grad, fused.name() + ":1", DataType::kFloat);
  rewrites->replaced[fused.name()] = std::move(fused);
  return true;
}

}  // namespace

int HoistRoundingCasts(proto::GraphDef* graph) {
  Rewrites rewrites;
  {
    const Fuser fuser(graph);
    for (const proto::NodeDef& round : graph->node()) {
      if (!IsRounding(round) || round.input_size() < 1 || ParseInput(round.input(0)).index != 0) {
        continue;
      }
      const proto::NodeDef* reshape = fuser.Producer(round.input(0));
      if (reshape == nullptr || reshape->op() != "Reshape" || reshape->input_size() < 2 ||
          fuser.ControlConsumed(*reshape)) {
        continue;
      }
      const Readers readers = fuser.ReadersOf(reshape->name());
      if (readers.values.size() != 1 || !Unclaimed(rewrites, readers.shapes)) continue;
      // x -> round' (a new name) -> reshape' (of bfloat16, under the Cast's name).
      proto::NodeDef early = round;
      early.set_name(round.name() + "/before_reshape");
      early.clear_input();
      early.add_input(reshape->input(0));
      proto::NodeDef moved = *reshape;
      moved.set_name(round.name());
      moved.set_device(round.device());
      moved.clear_input();
      moved.add_input(early.name());
      moved.add_input(reshape->input(1));
      AddControlInputs({reshape, &round}, &moved);
      (*moved.mutable_attr())["T"].set_type(static_cast<proto::DataType>(DataType::kBFloat16));
      // The reshape's gradient reads its output's shape: the moved Reshape has the same.
      ReadShapesOf(readers.shapes, round.name(), &rewrites);
      rewrites.removed.insert(reshape->name());
      rewrites.inserted[round.name()] = std::move(early);
      rewrites.replaced[round.name()] = std::move(moved);
    }
  }
  const int moved = static_cast<int>(rewrites.inserted.size());
  if (moved > 0) RewriteGraph(rewrites, graph);
  return moved;
}

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

bool FuseRounding(const Fuser& fuser, const KernelRegistry& kernels, std::string_view device_type,
                  const proto::NodeDef& node, Rewrites* rewrites, int* fused) {
  bool did = false;
  if (IsRounding(node)) {
    did = FuseGelu(fuser, kernels, device_type, node, rewrites);
  } else if (node.op() == "FusedLayerNorm") {
    did = FuseLayerNorm(fuser, kernels, device_type, node, rewrites);
  } else if (node.op() == "BiasAddGrad") {
    did = FuseBiasAddGrad(fuser, kernels, device_type, node, rewrites);
  } else {
    return false;
  }
  if (did) ++*fused;
  return true;
}

}  // namespace weft::fusion
