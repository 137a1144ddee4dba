# Nn kernels: sources and tests, included by kernels/CMakeLists.txt.
list(APPEND WEFT_KERNEL_SOURCES nn/register_nn_kernels.cc)
