#pragma once
// The inner loops of convolution (Note [Convolution geometry] in conv_utils.h):
// im2col/col2im and the direct kernels for convolutions whose groups have one
// channel on the big side (depthwise: groups == in_channels), compiled twice
// (conv_kernels_base.cpp, conv_kernels_avx2.cpp) and picked at run time by
// conv_loops_stub (Note [CPU capabilities] in dispatch_stub.h). All tensors are contiguous.
#include <cstdint>

#include "cpu/dispatch/dispatch_stub.h"

namespace flambeau::cpu {

struct ConvGeo {
  int64_t N = 0;
  int64_t Cb = 0, Hb = 1, Wb = 1;  // the big image: channels (all groups), height, width
  int64_t Cs = 0, Hs = 1, Ws = 1;  // the small image
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t groups = 1;
  int64_t big_hw() const { return Hb * Wb; }
  int64_t small_hw() const { return Hs * Ws; }
  int64_t kk() const { return kh * kw; }
  /// A 1x1 kernel, stride 1, no padding and images of one size (a transposed
  /// convolution's output_padding makes the big image larger): the columns are
  /// the image itself.
  bool pointwise() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && Hb == Hs && Wb == Ws;
  }
};

#define FB_CONV_KERNEL_DECLS(T)                                                                            \
  /* cols (C*kh*kw, Hs*Ws), rows ld apart, from the big image (C, Hb, Wb) */                               \
  void im2col(const ConvGeo& g, int64_t C, const T* img, T* cols, int64_t ld);                             \
  /* img (C, Hb, Wb) += the columns (rows ld apart) summed back */                                         \
  void col2im_add(const ConvGeo& g, int64_t C, const T* cols, T* img, int64_t ld);                         \
  /* small planes [begin, end) of N*Cs: small[n, c] = bias[c] + sum_k w[c, k] * big[n, c / (Cs/groups)] */ \
  void direct_gather(const ConvGeo& g, const T* big, const T* w, const T* bias, T* small, int64_t begin,   \
                     int64_t end);                                                                         \
  /* big planes [begin, end) of N*Cb (Cb == groups): big[n, c] = bias[c] + scatter of small[n, group c] */ \
  void direct_scatter(const ConvGeo& g, const T* small, const T* w, const T* bias, T* big, int64_t begin,  \
                      int64_t end);                                                                        \
  /* dw[c, k] for small channels c in [begin, end): sum over n of small[n, c] * the window k of big[n, c / \
   * m] */                                                                                                 \
  void direct_weight_grad(const ConvGeo& g, const T* small, const T* big, T* dw, int64_t begin, int64_t end);

/// One dtype's loops of one instruction set (FB_CONV_KERNEL_DECLS).
template <class T>
struct ConvLoopsOf {
  void (*im2col)(const ConvGeo& g, int64_t C, const T* img, T* cols, int64_t ld);
  void (*col2im_add)(const ConvGeo& g, int64_t C, const T* cols, T* img, int64_t ld);
  void (*direct_gather)(const ConvGeo& g, const T* big, const T* w, const T* bias, T* small, int64_t begin,
                        int64_t end);
  void (*direct_scatter)(const ConvGeo& g, const T* small, const T* w, const T* bias, T* big, int64_t begin,
                         int64_t end);
  void (*direct_weight_grad)(const ConvGeo& g, const T* small, const T* big, T* dw, int64_t begin,
                             int64_t end);
};
struct ConvLoops {
  ConvLoopsOf<float> f32;
  ConvLoopsOf<double> f64;
};

namespace conv_base {
FB_CONV_KERNEL_DECLS(float)
FB_CONV_KERNEL_DECLS(double)
void fill_loops(ConvLoops& t);
}  // namespace conv_base
namespace conv_avx2 {
FB_CONV_KERNEL_DECLS(float)
FB_CONV_KERNEL_DECLS(double)
void fill_loops(ConvLoops& t);
}  // namespace conv_avx2

/// AVX-512 CPUs run the AVX2 loops (conv.cpp registers none of their own).
FB_DECLARE_DISPATCH(const ConvLoops& (*)(), conv_loops_stub);

}  // namespace flambeau::cpu
