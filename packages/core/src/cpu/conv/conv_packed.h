#pragma once
// A float32 convolution on a weight packed beforehand, with a residual add and a relu applied as each
// output is stored (Note [Packed convolution weight] in conv_direct_avx512.cpp): what fb.compile's eval
// graphs call for a convolution whose weight (a batch norm folded in) stays the same between calls.
// Bound in _C as _pack_conv_weight and _conv_packed (src/python/bind_conv.cpp); not ops of the table:
// they never record autograd (_conv_packed runs the separate ops when a tensor needs a gradient).
#include <optional>

#include "flambeau/tensor.h"

namespace flambeau::cpu {

/// The weight (C_out, C_in / groups, kh, kw) packed for conv_packed, or an empty tensor where the direct
/// kernel does not run (no AVX-512, not float32, not 4-D, a 1x1 kernel or one input channel per group).
Tensor pack_conv_weight(const Tensor& weight, int64_t groups);

/// relu?(conv2d(input, weight, bias, stride, padding, dilation, groups) + residual?), packed being
/// pack_conv_weight(weight, groups): the separate ops' values. Where the direct kernel does not take the
/// call (packed empty or of another size, a geometry it does not suit, a strided tensor, a residual of
/// another shape, a tensor that requires grad under grad mode) it runs convolution, add_ and relu_; on
/// CPUs without AVX-512, the AVX2 direct kernel takes the residual and relu in its stores where it runs
/// the convolution (Note [AVX2 direct convolution]: the same bits as the separate ops).
Tensor conv_packed(const Tensor& input, const Tensor& weight, const Tensor& packed,
                   const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation, int64_t groups, const std::optional<Tensor>& residual, bool relu);

}  // namespace flambeau::cpu
