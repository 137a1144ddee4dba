// The per-pass choice between im2col + GEMM and oneDNN; see conv_algorithm.h.
#include "weft/kernels/nn/conv_algorithm.h"

#include <atomic>

#include "weft/kernels/nn/onednn_conv.h"

namespace weft::kernels {
namespace {

// -1: choose per shape; else a forced ConvAlgorithm.
std::atomic<int> forced_algorithm{-1};

constexpr int64_t kMinOneDnnBackpropInputDepth = 4;

}  // namespace

const char* ConvPassName(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward:
      return "Conv2D";
    case ConvPass::kBackpropInput:
      return "Conv2DBackpropInput";
    case ConvPass::kBackpropFilter:
      return "Conv2DBackpropFilter";
  }
  return "?";
}

const char* ConvAlgorithmName(ConvAlgorithm algorithm) {
  return algorithm == ConvAlgorithm::kOneDnn ? "onednn" : "im2col_gemm";
}

ConvAlgorithm ChooseConvAlgorithm(ConvPass pass, const SpatialGeometry& g, int64_t out_depth,
                                  DataType dtype) {
  if (dtype != DataType::kFloat || !OneDnnConvolution::Supports(g, out_depth)) {
    return ConvAlgorithm::kIm2ColGemm;
  }
  const int forced = forced_algorithm.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<ConvAlgorithm>(forced);
  // Measured on W2 (bench/run.sh conv): oneDNN's backprop input over very few input channels
  // (conv1, one channel) runs at a tenth of its usual rate and 3x slower than im2col + GEMM.
  if (pass == ConvPass::kBackpropInput && g.in_depth < kMinOneDnnBackpropInputDepth) {
    return ConvAlgorithm::kIm2ColGemm;
  }
  return ConvAlgorithm::kOneDnn;
}

void SetConvAlgorithmOverride(std::optional<ConvAlgorithm> algorithm) {
  forced_algorithm.store(algorithm ? static_cast<int>(*algorithm) : -1, std::memory_order_relaxed);
}

}  // namespace weft::kernels
