# Array kernels: sources and tests, included by kernels/CMakeLists.txt.
list(APPEND WEFT_KERNEL_SOURCES array/register_array_kernels.cc)
