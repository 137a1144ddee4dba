# Math kernels: sources and tests, included by kernels/CMakeLists.txt.
list(APPEND WEFT_KERNEL_SOURCES math/register_math_kernels.cc)
