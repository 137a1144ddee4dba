# Per-worker dataset kernels (MakeIterator, IteratorGetNext): sources and tests, included by
# kernels/CMakeLists.txt.
list(APPEND WEFT_KERNEL_SOURCES data/iterator_ops.cc)

weft_test(kernels_data_test
  SOURCES data/iterator_ops_test.cc
  DEPS weft_kernel_testing weft_data)
