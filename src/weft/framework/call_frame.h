// CallFrame: how a step's feeds reach the graph and its fetches leave it. The runtime rewrites
// each feed into an _Arg node and each fetch into a _Retval node; their kernels read and write the
// frame by index. Different indices may be used from different threads at once; each retval index
// is written once per step.
#pragma once

#include <vector>

#include "weft/core/tensor.h"

namespace weft {

class CallFrame {
 public:
  CallFrame(std::vector<Tensor> args, int num_retvals)
      : args_(std::move(args)), retvals_(num_retvals) {}

  Status GetArg(int index, Tensor* value) const;
  Status SetRetval(int index, const Tensor& value);
  // Moves out every retval; InvalidArgument naming the index of one that was never set.
  StatusOr<std::vector<Tensor>> ConsumeRetvals();

  int num_args() const { return static_cast<int>(args_.size()); }
  int num_retvals() const { return static_cast<int>(retvals_.size()); }

 private:
  std::vector<Tensor> args_;
  std::vector<Tensor> retvals_;
};

}  // namespace weft
