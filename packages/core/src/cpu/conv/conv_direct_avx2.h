#pragma once
// The direct float32 forward convolution for AVX2 CPUs (Note [AVX2 direct convolution] in
// conv_direct_avx2.cpp): what conv.cpp runs instead of im2col + GEMM for small convolutions
// (ResNet's 3x3 layers of 16 to 64 channels) where the AVX-512 kernels of conv_direct.h are not
// there. Chosen by conv_direct_avx2_stub: the AVX2 variant only (an AVX-512 CPU capped at AVX2
// runs it too; uncapped, conv.cpp runs the AVX-512 kernels first).
#include <cstdint>

#include "conv_kernels.h"

namespace flambeau::cpu {

struct ConvDirectAvx2Kernels {
  /// Whether forward takes this (forward, not transposed) geometry: one group, dilation 1,
  /// strides 1 or 2, kernels up to 7x7, not pointwise, few enough input taps per output.
  bool (*suits)(const ConvGeo& g);
  /// small (N, Cs, Hs, Ws) = relu?(conv(big (N, Cb, Hb, Wb), w (Cs, Cb, kh, kw)) + bias + residual),
  /// bias and residual (small's shape) may be null; all contiguous NCHW. Threads over images.
  void (*forward)(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small,
                  const float* residual, bool relu);
};

namespace conv_avx2 {
bool direct_conv_suits(const ConvGeo& g);
void direct_conv(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small,
                 const float* residual, bool relu);
}  // namespace conv_avx2

FB_DECLARE_DISPATCH(const ConvDirectAvx2Kernels& (*)(), conv_direct_avx2_stub);

/// conv_direct_avx2_stub's kernel where conv_direct_stub has none (conv.cpp), else nullptr: the
/// AVX-512 kernels run first where they are there.
const ConvDirectAvx2Kernels* direct_avx2_kernels();

}  // namespace flambeau::cpu
