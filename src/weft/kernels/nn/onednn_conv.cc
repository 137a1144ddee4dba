// oneDNN convolutions over batch shards; see onednn_conv.h.
#include "weft/kernels/nn/onednn_conv.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "weft/core/tensor.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/onednn_util.h"

namespace weft::kernels {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

int64_t PadBottom(const SpatialGeometry& g) {
  return (g.out_rows - 1) * g.stride_rows + g.window_rows - g.in_rows - g.pad_top;
}
int64_t PadRight(const SpatialGeometry& g) {
  return (g.out_cols - 1) * g.stride_cols + g.window_cols - g.in_cols - g.pad_left;
}

// Image shards of a batch: shard s covers [First(s), First(s + 1)).
struct BatchShards {
  int64_t batch;
  int64_t count;
  int64_t First(int64_t shard) const { return batch * shard / count; }
  int64_t Size(int64_t shard) const { return First(shard + 1) - First(shard); }
};

BatchShards ShardBatch(OpKernelContext* context, int64_t batch) {
  const int64_t threads = std::max(1, context->device()->intra_op_threads());
  return BatchShards{batch, std::clamp<int64_t>(threads, 1, batch)};
}

Status DnnlError(const dnnl::error& e, ConvPass pass, const SpatialGeometry& g) {
  const auto code = e.status == dnnl_unimplemented ? Code::kUnimplemented : Code::kInternal;
  return Status(code, StrCat("oneDNN ", ConvPassName(pass), " of a ", g.window_rows, "x",
                             g.window_cols, " convolution over [", g.batch, ",", g.in_rows, ",",
                             g.in_cols, ",", g.in_depth, "]: ", e.what()));
}

// Runs fn(shard) -> Status for every shard on the intra-op threads; the first failure wins.
template <typename Fn>
Status ForEachShard(OpKernelContext* context, const BatchShards& shards, ConvPass pass,
                    const SpatialGeometry& g, Fn&& fn) {
  std::vector<Status> statuses(shards.count);
  ParallelFor(context, shards.count, 1e12, [&](int64_t begin, int64_t end) {
    UseOneOpenMpThread();
    for (int64_t shard = begin; shard < end; ++shard) {
      try {
        statuses[shard] = fn(shard);
      } catch (const dnnl::error& e) {
        statuses[shard] = DnnlError(e, pass, g);
      }
    }
  });
  for (Status& status : statuses) WEFT_RETURN_IF_ERROR(status);
  return Status::OK();
}

// A tensor of at least `bytes` bytes (the allocator's 64-byte alignment is what oneDNN wants).
StatusOr<Tensor> AllocateBytes(int64_t bytes) {
  return Tensor::Allocate(DataType::kFloat, TensorShape({std::max<int64_t>(1, (bytes + 3) / 4)}));
}

// Element `offset` of an array of `dtype` (float32 or bfloat16), for oneDNN's untyped handles.
void* At(const void* base, DataType dtype, int64_t offset) {
  const int64_t bytes = dtype == DataType::kBFloat16 ? 2 : 4;
  return const_cast<char*>(static_cast<const char*>(base)) + offset * bytes;
}

// What the descriptors of every pass take besides the memory layouts.
struct ConvWindow {
  memory::dims strides, pad_before, pad_after;
};

}  // namespace

// The primitives of one pass over `batch` images, and the memory layouts they use.
struct OneDnnConvolution::Primitives {
  dnnl::primitive convolution;
  memory::desc data_md;          // input or input_grad, NHWC
  memory::desc out_md;           // output or out_backprop, NHWC
  memory::desc user_weights_md;  // filter or filter_grad as Weft stores it, HWIO
  memory::desc weights_md;       // the layout the primitive reads or writes
  memory::desc bias_md;          // a fused forward's bias [Cout]
  // user -> primitive layout (forward, backprop input), or back (backprop filter); empty when the
  // layouts agree.
  std::optional<dnnl::reorder> weights_reorder;
  memory::desc scratchpad_md;

  bool NeedsReorder() const { return weights_reorder.has_value(); }

  // Runs the convolution on this thread with `args` plus a scratchpad of its own.
  Status Execute(std::unordered_map<int, memory> args) const {
    WEFT_ASSIGN_OR_RETURN(Tensor scratchpad, AllocateBytes(scratchpad_md.get_size()));
    dnnl::engine& engine = OneDnnCpuEngine();
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(scratchpad_md, engine, scratchpad.data<float>()));
    dnnl::stream stream(engine);
    convolution.execute(stream, args);
    stream.wait();
    return Status::OK();
  }

  // Builds everything above for `pass` (with `fusion`, forward only) over `batch` images of
  // geometry g and `dtype` (a backprop filter's weights in float32 whatever it is); throws
  // dnnl::error.
  void Build(ConvPass pass, ConvFusion fusion, DataType dtype, const SpatialGeometry& g,
             int64_t out_depth, int64_t batch);

 private:
  // The forward pass's descriptor (with the bias and ReLU of `fusion` applied as each output block
  // is written); also the hint the backward passes are built from.
  dnnl::convolution_forward::primitive_desc ForwardDesc(ConvFusion fusion,
                                                        const memory::desc& any_weights,
                                                        const ConvWindow& window,
                                                        const dnnl::primitive_attr& attr) const;
  // The convolution of `pass`, its weights' layout and its scratchpad.
  void BuildPass(ConvPass pass, const dnnl::convolution_forward::primitive_desc& forward,
                 const memory::desc& any_weights, const ConvWindow& window,
                 const dnnl::primitive_attr& attr);
};

void OneDnnConvolution::Primitives::Build(ConvPass pass, ConvFusion fusion, DataType dtype,
                                          const SpatialGeometry& g, int64_t out_depth,
                                          int64_t batch) {
  dnnl::engine& engine = OneDnnCpuEngine();
  const memory::dims data_dims = {batch, g.in_depth, g.in_rows, g.in_cols};
  const memory::dims out_dims = {batch, out_depth, g.out_rows, g.out_cols};
  const memory::dims weights_dims = {out_depth, g.in_depth, g.window_rows, g.window_cols};
  const ConvWindow window = {.strides = {g.stride_rows, g.stride_cols},
                             .pad_before = {g.pad_top, g.pad_left},
                             .pad_after = {PadBottom(g), PadRight(g)}};
  const memory::data_type type =
      dtype == DataType::kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
  // A filter gradient is summed over the batch shards in float32, so it leaves oneDNN unrounded.
  const memory::data_type weights_type =
      pass == ConvPass::kBackpropFilter ? memory::data_type::f32 : type;
  data_md = memory::desc(data_dims, type, Tag::nhwc);
  out_md = memory::desc(out_dims, type, Tag::nhwc);
  user_weights_md = memory::desc(weights_dims, weights_type, Tag::hwio);
  const memory::desc any_weights(weights_dims, weights_type, Tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (fusion != ConvFusion::kNone) {
    bias_md = memory::desc({out_depth}, memory::data_type::f32, Tag::a);
  }
  // The forward descriptor is also the backward passes' hint, with the forward's own types.
  const memory::desc forward_weights(weights_dims, type, Tag::any);
  BuildPass(pass, ForwardDesc(fusion, forward_weights, window, attr), any_weights, window, attr);
  if (weights_md != user_weights_md) {
    // Weight reorders are plain copies that need no scratchpad.
    weights_reorder = pass == ConvPass::kBackpropFilter
                          ? dnnl::reorder(dnnl::reorder::primitive_desc(engine, weights_md, engine,
                                                                        user_weights_md))
                          : dnnl::reorder(dnnl::reorder::primitive_desc(engine, user_weights_md,
                                                                        engine, weights_md));
  }
}

dnnl::convolution_forward::primitive_desc OneDnnConvolution::Primitives::ForwardDesc(
    ConvFusion fusion, const memory::desc& any_weights, const ConvWindow& window,
    const dnnl::primitive_attr& attr) const {
  dnnl::primitive_attr forward_attr = attr;
  if (fusion == ConvFusion::kBiasRelu) {
    dnnl::post_ops post_ops;
    post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    forward_attr.set_post_ops(post_ops);
  }
  return dnnl::convolution_forward::primitive_desc(
      fusion == ConvFusion::kNone
          ? dnnl::convolution_forward::desc(
                dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, data_md,
                any_weights, out_md, window.strides, window.pad_before, window.pad_after)
          : dnnl::convolution_forward::desc(
                dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, data_md,
                any_weights, bias_md, out_md, window.strides, window.pad_before, window.pad_after),
      forward_attr, OneDnnCpuEngine());
}

void OneDnnConvolution::Primitives::BuildPass(
    ConvPass pass, const dnnl::convolution_forward::primitive_desc& forward,
    const memory::desc& any_weights, const ConvWindow& window, const dnnl::primitive_attr& attr) {
  dnnl::engine& engine = OneDnnCpuEngine();
  switch (pass) {
    case ConvPass::kForward:
      convolution = dnnl::convolution_forward(forward);
      weights_md = forward.weights_desc();
      scratchpad_md = forward.scratchpad_desc();
      break;
    case ConvPass::kBackpropInput: {
      const dnnl::convolution_backward_data::primitive_desc backward(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, data_md,
                                                any_weights, out_md, window.strides,
                                                window.pad_before, window.pad_after),
          attr, engine, forward);
      convolution = dnnl::convolution_backward_data(backward);
      weights_md = backward.weights_desc();
      scratchpad_md = backward.scratchpad_desc();
      break;
    }
    case ConvPass::kBackpropFilter: {
      const dnnl::convolution_backward_weights::primitive_desc backward(
          dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, data_md,
                                                   any_weights, out_md, window.strides,
                                                   window.pad_before, window.pad_after),
          attr, engine, forward);
      convolution = dnnl::convolution_backward_weights(backward);
      weights_md = backward.diff_weights_desc();
      scratchpad_md = backward.scratchpad_desc();
      break;
    }
  }
}

OneDnnConvolution::OneDnnConvolution() = default;
OneDnnConvolution::~OneDnnConvolution() = default;

bool OneDnnConvolution::Supports(const SpatialGeometry& g, int64_t out_depth) {
  const int64_t sizes[] = {g.batch,   g.in_rows,
                           g.in_cols, g.in_depth,
                           out_depth, g.out_rows * g.out_cols * std::max(g.in_depth, out_depth)};
  for (int64_t size : sizes) {
    if (size <= 0 || size > INT_MAX) return false;
  }
  return PadBottom(g) >= 0 && PadRight(g) >= 0;
}

StatusOr<std::shared_ptr<const OneDnnConvolution::Primitives>> OneDnnConvolution::Get(
    ConvPass pass, ConvFusion fusion, DataType dtype, const SpatialGeometry& g, int64_t out_depth,
    int64_t batch) {
  if (pass != ConvPass::kForward) fusion = ConvFusion::kNone;
  const Key key = {static_cast<int64_t>(pass),
                   static_cast<int64_t>(fusion),
                   static_cast<int64_t>(dtype),
                   batch,
                   g.in_rows,
                   g.in_cols,
                   g.in_depth,
                   g.window_rows,
                   g.window_cols,
                   g.stride_rows,
                   g.stride_cols,
                   g.pad_top,
                   g.pad_left,
                   g.out_rows,
                   g.out_cols,
                   out_depth};
  {
    MutexLock lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  UseOneOpenMpThread();
  auto made = std::make_shared<Primitives>();
  try {
    made->Build(pass, fusion, dtype, g, out_depth, batch);
  } catch (const dnnl::error& e) {
    return DnnlError(e, pass, g);
  }
  MutexLock lock(mu_);
  // Shapes rarely change between steps; a model whose shapes keep changing starts over.
  if (cache_.size() >= 64) cache_.clear();
  return cache_.emplace(key, std::move(made)).first->second;
}

StatusOr<std::vector<std::shared_ptr<const OneDnnConvolution::Primitives>>>
OneDnnConvolution::GetForShards(ConvPass pass, ConvFusion fusion, DataType dtype,
                                const SpatialGeometry& g, int64_t out_depth, int64_t num_shards) {
  const BatchShards shards{g.batch, num_shards};
  std::vector<std::shared_ptr<const Primitives>> primitives(num_shards);
  for (int64_t s = 0; s < num_shards; ++s) {
    if (s > 0 && shards.Size(s) == shards.Size(s - 1)) {
      primitives[s] = primitives[s - 1];
      continue;
    }
    WEFT_ASSIGN_OR_RETURN(primitives[s], Get(pass, fusion, dtype, g, out_depth, shards.Size(s)));
  }
  return primitives;
}

namespace {

// The forward and backprop-input passes: puts the filter in each distinct primitive's layout once,
// then runs every shard with the filter and the arguments shard_args(primitives, shard) gives.
template <typename Primitives, typename ShardArgs>
Status RunWithFilter(OpKernelContext* context, const BatchShards& shards, ConvPass pass,
                     const SpatialGeometry& g,
                     const std::vector<std::shared_ptr<const Primitives>>& primitives,
                     const void* filter, ShardArgs&& shard_args) {
  std::vector<Tensor> reordered(primitives.size());
  std::vector<const void*> weights(primitives.size(), filter);
  try {
    dnnl::stream stream(OneDnnCpuEngine());
    for (size_t s = 0; s < primitives.size(); ++s) {
      const Primitives& p = *primitives[s];
      if (!p.NeedsReorder()) continue;
      if (s > 0 && primitives[s] == primitives[s - 1]) {
        weights[s] = weights[s - 1];
        continue;
      }
      WEFT_ASSIGN_OR_RETURN(reordered[s], AllocateBytes(p.weights_md.get_size()));
      memory from(p.user_weights_md, OneDnnCpuEngine(), const_cast<void*>(filter));
      memory to(p.weights_md, OneDnnCpuEngine(), reordered[s].template data<float>());
      p.weights_reorder->execute(stream, from, to);
      stream.wait();
      weights[s] = reordered[s].template data<float>();
    }
  } catch (const dnnl::error& e) {
    return DnnlError(e, pass, g);
  }
  return ForEachShard(context, shards, pass, g, [&](int64_t s) {
    const Primitives& p = *primitives[s];
    std::unordered_map<int, memory> args = shard_args(p, s);
    args.emplace(DNNL_ARG_WEIGHTS,
                 memory(p.weights_md, OneDnnCpuEngine(), const_cast<void*>(weights[s])));
    return p.Execute(std::move(args));
  });
}

}  // namespace

Status OneDnnConvolution::Forward(OpKernelContext* context, const SpatialGeometry& g,
                                  int64_t out_depth, DataType dtype, const void* input,
                                  const void* filter, const float* bias, ConvFusion fusion,
                                  void* output) {
  const BatchShards shards = ShardBatch(context, g.batch);
  WEFT_ASSIGN_OR_RETURN(
      auto primitives, GetForShards(ConvPass::kForward, fusion, dtype, g, out_depth, shards.count));
  const int64_t in_image = g.in_rows * g.in_cols * g.in_depth;
  const int64_t out_image = g.out_rows * g.out_cols * out_depth;
  return RunWithFilter(
      context, shards, ConvPass::kForward, g, primitives, filter,
      [&](const Primitives& p, int64_t s) {
        dnnl::engine& engine = OneDnnCpuEngine();
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_SRC, memory(p.data_md, engine, At(input, dtype, shards.First(s) * in_image))},
            {DNNL_ARG_DST,
             memory(p.out_md, engine, At(output, dtype, shards.First(s) * out_image))},
        };
        if (fusion != ConvFusion::kNone) {
          args.emplace(DNNL_ARG_BIAS, memory(p.bias_md, engine, const_cast<float*>(bias)));
        }
        return args;
      });
}

Status OneDnnConvolution::BackpropInput(OpKernelContext* context, const SpatialGeometry& g,
                                        int64_t out_depth, DataType dtype, const void* filter,
                                        const void* out_backprop, void* input_grad) {
  const BatchShards shards = ShardBatch(context, g.batch);
  WEFT_ASSIGN_OR_RETURN(auto primitives, GetForShards(ConvPass::kBackpropInput, ConvFusion::kNone,
                                                      dtype, g, out_depth, shards.count));
  const int64_t in_image = g.in_rows * g.in_cols * g.in_depth;
  const int64_t out_image = g.out_rows * g.out_cols * out_depth;
  return RunWithFilter(
      context, shards, ConvPass::kBackpropInput, g, primitives, filter,
      [&](const Primitives& p, int64_t s) {
        dnnl::engine& engine = OneDnnCpuEngine();
        return std::unordered_map<int, memory>{
            {DNNL_ARG_DIFF_DST,
             memory(p.out_md, engine, At(out_backprop, dtype, shards.First(s) * out_image))},
            {DNNL_ARG_DIFF_SRC,
             memory(p.data_md, engine, At(input_grad, dtype, shards.First(s) * in_image))},
        };
      });
}

Status OneDnnConvolution::BackpropFilter(OpKernelContext* context, const SpatialGeometry& g,
                                         int64_t out_depth, DataType dtype, const void* input,
                                         const void* out_backprop, float* filter_grad) {
  const BatchShards shards = ShardBatch(context, g.batch);
  WEFT_ASSIGN_OR_RETURN(auto primitives, GetForShards(ConvPass::kBackpropFilter, ConvFusion::kNone,
                                                      dtype, g, out_depth, shards.count));
  const int64_t filter_size = g.patch_size() * out_depth;
  // Shard 0 leaves its sum in filter_grad, shard s > 0 in row s - 1 of `partial`, each in Weft's
  // layout; the rows are added at the end.
  WEFT_ASSIGN_OR_RETURN(
      Tensor partial,
      Tensor::Allocate(DataType::kFloat, TensorShape({shards.count - 1, filter_size})));
  const int64_t in_image = g.in_rows * g.in_cols * g.in_depth;
  const int64_t out_image = g.out_rows * g.out_cols * out_depth;
  WEFT_RETURN_IF_ERROR(
      ForEachShard(context, shards, ConvPass::kBackpropFilter, g, [&](int64_t s) -> Status {
        const Primitives& p = *primitives[s];
        dnnl::engine& engine = OneDnnCpuEngine();
        float* sum = s == 0 ? filter_grad : partial.data<float>() + (s - 1) * filter_size;
        Tensor blocked;
        if (p.NeedsReorder()) {
          WEFT_ASSIGN_OR_RETURN(blocked, AllocateBytes(p.weights_md.get_size()));
        }
        float* diff_weights = p.NeedsReorder() ? blocked.data<float>() : sum;
        WEFT_RETURN_IF_ERROR(p.Execute({
            {DNNL_ARG_SRC, memory(p.data_md, engine, At(input, dtype, shards.First(s) * in_image))},
            {DNNL_ARG_DIFF_DST,
             memory(p.out_md, engine, At(out_backprop, dtype, shards.First(s) * out_image))},
            {DNNL_ARG_DIFF_WEIGHTS, memory(p.weights_md, engine, diff_weights)},
        }));
        if (p.NeedsReorder()) {
          dnnl::stream stream(engine);
          memory from(p.weights_md, engine, diff_weights);
          memory to(p.user_weights_md, engine, sum);
          p.weights_reorder->execute(stream, from, to);
          stream.wait();
        }
        return Status::OK();
      }));
  for (int64_t s = 1; s < shards.count; ++s) {
    const float* part = partial.data<float>() + (s - 1) * filter_size;
    for (int64_t i = 0; i < filter_size; ++i) filter_grad[i] += part[i];
  }
  return Status::OK();
}

}  // namespace weft::kernels
