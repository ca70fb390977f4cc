#pragma once
// The bfloat16 convolution kernels for CPUs with AVX512-BF16 (Note [bfloat16 convolution] in
// conv_bf16_avx512.cpp): forward convolutions, transposed ones (a convolution's input gradient) and
// weight gradients, computed with vdpbf16ps on the bfloat16 values with
// float32 accumulation and one rounding, used by conv.cpp when conv_bf16_stub has them and
// bf16_gemm_kernel_available() (the CPU has the instruction); otherwise bfloat16 convolutions run in
// float32 on copies (Note [Low-precision kernels]).
#include <cstdint>

#include "conv_kernels.h"

namespace flambeau::cpu {

struct ConvBf16Kernels {
  /// small (N, Cs, Hs, Ws) = conv(big (N, Cb, Hb, Wb), w (Cs, Cb/groups, kh, kw)) + bias (may be null);
  /// all contiguous bfloat16 bits. Any stride, padding, dilation and groups.
  void (*forward)(const ConvGeo& g, const uint16_t* big, const uint16_t* w, const uint16_t* bias,
                  uint16_t* small);
  /// big (N, Cb, Hb, Wb) = the transposed convolution of small (N, Cs, Hs, Ws) with w (Cs, Cb/groups,
  /// kh, kw) + bias (may be null); all contiguous bfloat16 bits. Any stride, padding, dilation,
  /// output_padding and groups.
  void (*transposed)(const ConvGeo& g, const uint16_t* small, const uint16_t* w, const uint16_t* bias,
                     uint16_t* big);
  /// dw (Cs, Cb/groups, kh, kw) = sum over images of small (N, Cs, Hs, Ws) times the windows of
  /// big (N, Cb, Hb, Wb); all contiguous bfloat16 bits, summed in float32 and rounded once.
  void (*weight_grad)(const ConvGeo& g, const uint16_t* small, const uint16_t* big, uint16_t* dw);
};

/// AVX-512 only (the kernels also need AVX512-BF16 at run time: bf16_gemm_kernel_available()).
FB_DECLARE_DISPATCH(const ConvBf16Kernels& (*)(), conv_bf16_stub);

}  // namespace flambeau::cpu
