// Conv2D and its two backprops for float32 or bfloat16 NHWC tensors and [KH, KW, Cin, Cout]
// filters through oneDNN's JIT convolutions. The batch is split into one shard per intra-op thread
// and each shard runs a single-threaded oneDNN primitive on that thread, so oneDNN never starts
// OpenMP threads of its own and a device keeps to its thread budget (MirroredStrategy gives each
// replica its share). A kernel owns one OneDnnConvolution; primitives are built on first use for
// each shape and shard size and kept. Thread-safe: one object may run several steps' convolutions
// at once.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/mutex.h"
#include "weft/core/status.h"
#include "weft/framework/op_kernel.h"
#include "weft/kernels/nn/conv_algorithm.h"
#include "weft/kernels/nn/window_geometry.h"

namespace weft::kernels {

// What a forward convolution adds to its output in the same pass (_FusedConv2D).
enum class ConvFusion { kNone, kBias, kBiasRelu };

class OneDnnConvolution {
 public:
  OneDnnConvolution();
  ~OneDnnConvolution();

  // Whether oneDNN can express geometry `g`: sizes within its index range and a bottom/right
  // padding that is not negative (a VALID window that skips trailing input cannot be).
  static bool Supports(const SpatialGeometry& g, int64_t out_depth);

  // output [N, OH, OW, Cout] = Conv2D(input [N, H, W, Cin], filter [KH, KW, Cin, Cout]), plus
  // bias [Cout] (float32) and then ReLU as `fusion` says (bias may be null for kNone). `dtype`
  // (float32 or bfloat16) is the type of input, filter and output; bfloat16 accumulates in
  // float32 and rounds each output once.
  Status Forward(OpKernelContext* context, const SpatialGeometry& g, int64_t out_depth,
                 DataType dtype, const void* input, const void* filter, const float* bias,
                 ConvFusion fusion, void* output);
  // input_grad [N, H, W, Cin] from filter and out_backprop [N, OH, OW, Cout], all of `dtype`.
  Status BackpropInput(OpKernelContext* context, const SpatialGeometry& g, int64_t out_depth,
                       DataType dtype, const void* filter, const void* out_backprop,
                       void* input_grad);
  // filter_grad [KH, KW, Cin, Cout] from input and out_backprop (of `dtype`), summed over the
  // batch in float32 and written in float32 whatever `dtype` is.
  Status BackpropFilter(OpKernelContext* context, const SpatialGeometry& g, int64_t out_depth,
                        DataType dtype, const void* input, const void* out_backprop,
                        float* filter_grad);

 private:
  struct Primitives;
  // pass, fusion, dtype, shard batch, then the geometry and out_depth.
  using Key = std::array<int64_t, 16>;

  // The primitives for `pass` (with `fusion`, forward only) over `batch` images of geometry g
  // and `dtype`, built on first use.
  StatusOr<std::shared_ptr<const Primitives>> Get(ConvPass pass, ConvFusion fusion, DataType dtype,
                                                  const SpatialGeometry& g, int64_t out_depth,
                                                  int64_t batch);
  // The primitives of each of `num_shards` equal-as-can-be shards of g's batch.
  StatusOr<std::vector<std::shared_ptr<const Primitives>>> GetForShards(
      ConvPass pass, ConvFusion fusion, DataType dtype, const SpatialGeometry& g, int64_t out_depth,
      int64_t num_shards);

  Mutex mu_;
  std::map<Key, std::shared_ptr<const Primitives>> cache_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft::kernels
