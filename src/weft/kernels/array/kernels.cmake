# Array kernels: sources and tests, included by kernels/CMakeLists.txt (paths relative to it).
list(APPEND WEFT_KERNEL_SOURCES
  array/array_util.cc
  array/concat_op.cc
  array/const_op.cc
  array/fill_op.cc
  array/gather_ops.cc
  array/matrix_band_part_op.cc
  array/partition_ops.cc
  array/identity_op.cc
  array/register_array_kernels.cc
  array/reshape_op.cc
  array/shape_op.cc
  array/slice_op.cc
  array/tile_op.cc
  array/transpose_op.cc)

weft_test(kernels_array_test
  SOURCES
    array/array_shape_fn_test.cc
    testing/array_test_util.cc
    array/concat_op_test.cc
    array/const_op_test.cc
    array/fill_op_test.cc
    array/gather_ops_test.cc
    array/matrix_band_part_op_test.cc
    array/partition_ops_test.cc
    array/identity_op_test.cc
    array/reshape_op_test.cc
    array/shape_op_test.cc
    array/slice_op_test.cc
    array/tile_op_test.cc
    array/transpose_op_test.cc
    array/unsorted_segment_sum_op_test.cc
  DEPS weft_kernel_testing)
