#pragma once
// The channels-last (NHWC) loops of max, average and adaptive average pooling, forward and backward
// (Note [Channels-last pooling] in pool_channels_last.cpp), run by pool.cpp's out kernels when
// channels_last_pool() says the tensors are laid out for them.
#include <cstdint>
#include <optional>

#include "flambeau/pool_shape.h"
#include "flambeau/tensor.h"

namespace flambeau::cpu {

/// Note [Channels-last pooling]: fewer channels than a vector leave the NHWC loops scalar (LeNet's first
/// max pooling, (64, 6, 28, 28) channels-last: 1.76 ms NHWC, against 0.09 ms for the NCHW loops on
/// row-major data), so such tensors take the NCHW loops and their copies instead.
inline constexpr int64_t kMinChannelsLastChannels = 16;

/// True when `in` is a 4-d tensor dense in channels-last order (and not also row-major: then the
/// NCHW loops read it as it is) of at least kMinChannelsLastChannels channels, `out` is dense in
/// channels-last order (a 1x1 output may also be row-major), and out shares no memory with in.
bool channels_last_pool(const Tensor& in, const Tensor& out);

/// `t` dense in channels-last order: itself, or a copy.
Tensor channels_last(const Tensor& t);

/// float32, float64 and the integer dtypes (not bool).
void max_pool2d_nhwc(const Tensor& in, const Tensor& out, const Tensor& indices, const pool::Pool2d& p);
/// grad_input (zeroed here) += grad_output at each index; indices checked as the NCHW loops do.
void max_pool_backward_nhwc(const Tensor& grad_output, const Tensor& indices, const Tensor& grad_input);

/// float32 and float64.
void avg_pool2d_nhwc(const Tensor& in, const Tensor& out, const pool::Pool2d& p, bool count_include_pad,
                     std::optional<int64_t> divisor);
void avg_pool2d_backward_nhwc(const Tensor& grad_output, const Tensor& grad_input, const pool::Pool2d& p,
                              bool count_include_pad, std::optional<int64_t> divisor);
void adaptive_avg_pool2d_nhwc(const Tensor& in, const Tensor& out);
void adaptive_avg_pool2d_backward_nhwc(const Tensor& grad_output, const Tensor& grad_input);

}  // namespace flambeau::cpu
