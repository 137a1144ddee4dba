# Send/Recv kernels (the two ends of a tensor crossing devices through the step's Rendezvous):
# sources and tests, included by kernels/CMakeLists.txt (paths relative to kernels/).
list(APPEND WEFT_KERNEL_SOURCES sendrecv/sendrecv_ops.cc)

weft_test(kernels_sendrecv_test
  SOURCES sendrecv/sendrecv_ops_test.cc
  DEPS weft_kernel_testing)
