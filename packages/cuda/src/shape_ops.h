#pragma once
// flip, tril and triu on CUDA (shape_ops.cpp), made of dispatched ops: they
// run on cpu tensors too (module.cpp's _shape_op_on_host, for the host tests).
#include "flambeau/tensor.h"

namespace flambeau::cuda {

Tensor flip_impl(const Tensor& self, IntArrayRef dims);
Tensor tril_impl(const Tensor& self, int64_t diagonal);
Tensor triu_impl(const Tensor& self, int64_t diagonal);

}  // namespace flambeau::cuda
