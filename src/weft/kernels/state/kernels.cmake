# State kernels (resource variables, random ops, optimizer updates): sources and tests, included by
# kernels/CMakeLists.txt (paths relative to kernels/).
list(APPEND WEFT_KERNEL_SOURCES
  state/random_ops.cc
  state/register_state_kernels.cc
  state/sparse_training_ops.cc
  state/staging_ops.cc
  state/training_ops.cc
  state/var.cc
  state/variable_ops.cc)

weft_test(kernels_state_test
  SOURCES
    state/philox_test.cc
    state/random_ops_test.cc
    state/state_shape_fns_test.cc
    state/sparse_training_ops_test.cc
    state/staging_ops_test.cc
    state/training_ops_test.cc
    state/var_test.cc
    state/variable_ops_test.cc
  DEPS weft_kernel_testing)
