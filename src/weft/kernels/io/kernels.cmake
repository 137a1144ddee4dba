# Checkpoint kernels (SaveV2, RestoreV2): sources and tests, included by kernels/CMakeLists.txt.
list(APPEND WEFT_KERNEL_SOURCES io/save_restore_ops.cc)

weft_test(kernels_io_test
  SOURCES io/save_restore_ops_test.cc
  DEPS weft_kernel_testing weft_io)
