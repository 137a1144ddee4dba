// Which implementation runs each pass of a convolution: im2col + OpenBLAS GEMM (conv_ops.cc,
// conv_grad_ops.cc; any dtype, any geometry) or oneDNN's JIT convolutions (onednn_conv.h; float32
// only). The choice is per pass and shape, from the per-layer measurements of `bench/run.sh conv`
// (docs/performance.md); benchmarks and tests may force one algorithm to compare the two.
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "weft/core/dtype.h"
#include "weft/kernels/nn/window_geometry.h"

namespace weft::kernels {

enum class ConvPass { kForward, kBackpropInput, kBackpropFilter };
enum class ConvAlgorithm { kIm2ColGemm, kOneDnn };

const char* ConvPassName(ConvPass pass);
const char* ConvAlgorithmName(ConvAlgorithm algorithm);

// The algorithm for `pass` over geometry `g` with `out_depth` output channels in `dtype`: oneDNN
// where it supports the case and measured faster, else im2col + GEMM. A forced algorithm (below)
// wins where it can run the case.
ConvAlgorithm ChooseConvAlgorithm(ConvPass pass, const SpatialGeometry& g, int64_t out_depth,
                                  DataType dtype);

// Forces every later convolution onto `algorithm` where it can run (nullopt: choose per shape
// again). For benchmarks and tests that compare the two; not meant for production use.
void SetConvAlgorithmOverride(std::optional<ConvAlgorithm> algorithm);

}  // namespace weft::kernels
