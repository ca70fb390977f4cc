#pragma once
// The direct float32 convolution of conv_direct_avx512.cpp (Note [Direct
// convolution]): forward convolutions with one big-side channel per group or
// more, used by conv.cpp instead of im2col + GEMM when the CPU has AVX-512.
#include <cstdint>

#include "conv_kernels.h"

namespace flambeau::cpu::conv_avx512 {

/// Whether direct_conv handles this (forward, not transposed) geometry well:
/// strides up to 2 and output planes that fill most of its vectors.
bool direct_conv_suits(const ConvGeo& g);

/// small (N, Cs, Hs, Ws) = conv(big (N, Cb, Hb, Wb), w (Cs, Cb/groups, kh, kw)) + bias (may be null);
/// all contiguous. Threads over images and blocks of output channels.
void direct_conv(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small);

}  // namespace flambeau::cpu::conv_avx512
