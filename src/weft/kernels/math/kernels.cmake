# Math kernels: sources and tests, included by kernels/CMakeLists.txt (paths relative to kernels/).
list(APPEND WEFT_KERNEL_SOURCES
  math/add_n_op.cc
  math/argmax_op.cc
  math/batch_matmul_op.cc
  math/bcast.cc
  math/broadcast_gradient_args_op.cc
  math/cast_op.cc
  math/cwise_arith_ops.cc
  math/cwise_compare_ops.cc
  math/cwise_div_max_ops.cc
  math/cwise_equal_op.cc
  math/cwise_unary_ops.cc
  math/matmul_op.cc
  math/reduction_ops.cc
  math/register_math_kernels.cc
  math/select_op.cc)

weft_test(kernels_math_test
  SOURCES
    math/add_n_op_test.cc
    math/argmax_op_test.cc
    math/batch_matmul_op_test.cc
    math/bcast_test.cc
    math/broadcast_gradient_args_op_test.cc
    math/cast_op_test.cc
    math/cwise_arith_ops_test.cc
    math/cwise_compare_ops_test.cc
    math/cwise_div_max_ops_test.cc
    math/cwise_equal_op_test.cc
    math/cwise_unary_ops_test.cc
    math/math_shape_fns_test.cc
    math/matmul_bf16_op_test.cc
    math/matmul_op_test.cc
    math/reduction_ops_test.cc
    math/select_op_test.cc
  DEPS weft_kernel_testing)
