#pragma once
// The direct float32 convolution kernels for AVX-512 (Note [Direct convolution] in
// conv_direct_avx512.cpp): forward convolutions with one big-side channel per group or
// more, their weight gradients and strided transposed convolutions, used by conv.cpp
// instead of im2col + GEMM when conv_direct_stub has them (an AVX-512 CPU, not capped
// below it: Note [CPU capabilities] in dispatch_stub.h). One file per kernel:
// conv_direct_avx512.cpp (row-blocked forward), conv_direct_cv_avx512.cpp (channel-
// vectorized forward), conv_wgrad_avx512.cpp (weight gradient), conv_transposed_avx512.cpp
// (strided transposed); their shared plans are in conv_direct_plan.h.
#include <cstdint>

#include "conv_kernels.h"

namespace flambeau::cpu::conv_avx512 {

/// Whether direct_conv handles this (forward, not transposed) geometry well:
/// strides up to 2 and output planes that fill most of its vectors.
bool direct_conv_suits(const ConvGeo& g);

/// small (N, Cs, Hs, Ws) = conv(big (N, Cb, Hb, Wb), w (Cs, Cb/groups, kh, kw)) + bias (may be null);
/// all contiguous. Threads over images and blocks of output channels.
void direct_conv(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small);

/// Whether direct_conv_nhwc handles this geometry (that of the channel-vectorized kernel).
bool direct_conv_nhwc_suits(const ConvGeo& g);

/// direct_conv of channels-last big and small (N, H, W, C in memory; w contiguous): the
/// channel-vectorized kernel reads the input's pixels and writes each output pixel's channels in a row.
void direct_conv_nhwc(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small);

/// Note [Packed convolution weight]: the floats of w packed as direct_conv packs it on every call
/// (blocks of output channels side by side, per input channel and tap), for direct_conv_packed.
int64_t packed_weight_floats(const ConvGeo& g);
void pack_weight(const ConvGeo& g, const float* w, float* packed);

/// direct_conv on a weight packed by pack_weight (the same values), with an epilogue on each output:
/// + residual (same shape as small; may be null), then relu when asked. NCHW memory only.
void direct_conv_packed(const ConvGeo& g, const float* big, const float* packed, const float* bias,
                        float* small, const float* residual, bool relu);

/// Whether direct_weight_grad handles this forward geometry (the same range as
/// direct_conv's flat kernel, kernels of 2 taps and more).
bool direct_weight_grad_suits(const ConvGeo& g);

/// dw (Cs, Cb/groups, kh, kw) = the weight gradient of the forward convolution g,
/// from its input big (N, Cb, Hb, Wb) and its output's gradient small (N, Cs, Hs, Ws);
/// all contiguous. Threads over images (one partial dw per chunk, summed at the end).
void direct_weight_grad(const ConvGeo& g, const float* big, const float* small, float* dw);

/// Whether direct_transposed handles this transposed geometry (strides up to 4, kernels of 2 taps and more).
bool direct_transposed_suits(const ConvGeo& g);

/// big (N, Cb, Hb, Wb) = the transposed convolution of small (N, Cs, Hs, Ws) with
/// w (Cs, Cb/groups, kh, kw), + bias (may be null); all contiguous. Any stride.
void direct_transposed(const ConvGeo& g, const float* small, const float* w, const float* bias, float* big);

}  // namespace flambeau::cpu::conv_avx512

namespace flambeau::cpu {

struct ConvDirectKernels {
  bool (*direct_conv_suits)(const ConvGeo& g);
  void (*direct_conv)(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small);
  bool (*direct_weight_grad_suits)(const ConvGeo& g);
  void (*direct_weight_grad)(const ConvGeo& g, const float* big, const float* small, float* dw);
  bool (*direct_transposed_suits)(const ConvGeo& g);
  void (*direct_transposed)(const ConvGeo& g, const float* small, const float* w, const float* bias,
                            float* big);
  bool (*direct_conv_nhwc_suits)(const ConvGeo& g);
  void (*direct_conv_nhwc)(const ConvGeo& g, const float* big, const float* w, const float* bias, float* small);
  int64_t (*packed_weight_floats)(const ConvGeo& g);
  void (*pack_weight)(const ConvGeo& g, const float* w, float* packed);
  void (*direct_conv_packed)(const ConvGeo& g, const float* big, const float* packed, const float* bias,
                             float* small, const float* residual, bool relu);
};

/// AVX-512 only: the base and AVX2 slots are empty (conv.cpp).
FB_DECLARE_DISPATCH(const ConvDirectKernels& (*)(), conv_direct_stub);

}  // namespace flambeau::cpu
