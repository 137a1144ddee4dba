# Nn kernels: sources and tests, included by kernels/CMakeLists.txt (paths relative to kernels/).
list(APPEND WEFT_KERNEL_SOURCES
  nn/activation_ops.cc
  nn/avg_pooling_ops.cc
  nn/bias_add_ops.cc
  nn/conv_algorithm.cc
  nn/conv_common.cc
  nn/conv_grad_ops.cc
  nn/conv_ops.cc
  nn/fused_attention.cc
  nn/fused_attention_bf16.cc
  nn/fused_attention_grad_op.cc
  nn/fused_attention_op.cc
  nn/fused_bias_add_grad_op.cc
  nn/gelu_ops.cc
  nn/layer_norm_ops.cc
  nn/onednn_conv.cc
  nn/pooling_ops.cc
  nn/register_nn_kernels.cc
  nn/softmax_ops.cc
  nn/sparse_xent_op.cc
  nn/window_geometry.cc)

weft_test(kernels_nn_test
  SOURCES
    nn/activation_ops_test.cc
    nn/avg_pooling_ops_test.cc
    nn/bias_add_ops_test.cc
    nn/conv_bf16_ops_test.cc
    nn/conv_common_test.cc
    nn/conv_grad_ops_test.cc
    nn/conv_ops_test.cc
    nn/fused_attention_op_test.cc
    nn/fused_bias_add_grad_op_test.cc
    nn/gelu_ops_test.cc
    nn/layer_norm_ops_test.cc
    nn/nn_shape_fns_test.cc
    nn/pooling_ops_test.cc
    nn/softmax_ops_test.cc
    nn/sparse_xent_op_test.cc
    nn/window_geometry_test.cc
    simd_math_test.cc
    tile_gemm_bf16_test.cc
  DEPS weft_kernel_testing)
# The pooling loops run over channels with a trip count known only at run time; GCC's -O2 cost
# model leaves such loops scalar, -O3 vectorises them (MaxPoolGrad on W2: 8 ms -> see
# docs/performance.md).
set_source_files_properties(nn/pooling_ops.cc nn/avg_pooling_ops.cc
  PROPERTIES COMPILE_OPTIONS "-O3" SKIP_PRECOMPILE_HEADERS ON)
