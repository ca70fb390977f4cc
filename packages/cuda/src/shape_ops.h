#pragma once
// flip, tril, triu, index_fill and _pad_nd (forward, backward) on CUDA (shape_ops.cpp), made of dispatched
// ops: they run on cpu tensors too (module.cpp's _shape_op_on_host, for the host tests).
#include <string_view>

#include "flambeau/scalar.h"
#include "flambeau/tensor.h"

namespace flambeau::cuda {

Tensor flip_impl(const Tensor& self, IntArrayRef dims);
Tensor tril_impl(const Tensor& self, int64_t diagonal);
Tensor triu_impl(const Tensor& self, int64_t diagonal);
Tensor index_fill_impl(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
Tensor pad_nd_impl(const Tensor& self, IntArrayRef pad, std::string_view mode, double value);
Tensor pad_nd_backward_impl(const Tensor& grad_output, IntArrayRef input_size, IntArrayRef pad,
                            std::string_view mode);

}  // namespace flambeau::cuda
