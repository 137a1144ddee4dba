// Precompiled for the kernels and their tests: Eigen's Tensor module, the heaviest header they
// parse, with the thread-pool device that kernels/eigen_support.h asks for.
#pragma once

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/Tensor>
