# Collective kernels (all-reduce, broadcast, all-gather): sources and tests, included by kernels/CMakeLists.txt
# (paths relative to kernels/).
list(APPEND WEFT_KERNEL_SOURCES
  collective/collective_ops.cc)

weft_test(kernels_collective_test
  SOURCES
    collective/collective_ops_test.cc
    collective/collective_gather_ops_test.cc
  DEPS weft_kernel_testing)
