// CPU kernels: convolution (1-D and 2-D, transposed or not, grouped), the
// gradient of its weight (both out kernels: Note [Structured kernels]), and
// im2col/col2im (F.unfold/F.fold).
//
// Note [Convolution kernels]
// Per image and group, a convolution is a GEMM between the weight and the
// columns of the big image (Note [Convolution geometry] in conv_utils.h):
//   forward:      small = W (Cs_g, Cb_g*kk) @ im2col(big)            (+ bias)
//   transposed:   big   = col2im(W^T (Cb_g*kk, Cs_g) @ small)        (+ bias)
//   weight grad:  dW   += small (Cs_g, L) @ im2col(big)^T (L, Cb_g*kk)
// where forward the big image is the input and transposed it is the output, so
// one weight-gradient kernel serves both. A 1x1, stride-1, unpadded kernel
// skips im2col (the image is its own columns). Groups with one big-side channel
// (depthwise convolution, and LeNet's 1-channel first layer) use the direct
// loops of conv_kernels.inc instead of a GEMM. On AVX-512 CPUs, the other
// float32 forward convolutions (but 1x1 stride-1 unpadded ones, which need no
// im2col) run the direct kernel of Note [Direct convolution], and so do the
// other float32 convolutions but those 1x1 ones: weight gradients (Note
// [Direct weight gradient]), stride-1 transposed convolutions (Note [Stride-1
// transposed convolution]: the input gradient of a stride-1 convolution) and
// strided ones of 2+ taps (Note [Strided transposed convolution]). On AVX2 CPUs, float32 forward
// convolutions of one group, stride 1 or 2 and up to 1,152 input taps per output run the direct kernel
// of Note [AVX2 direct convolution] (conv_direct_avx2.cpp) instead of im2col + GEMM.
//
// Channels-last tensors (Note [Result layout]: a channels-last input or weight gives a channels-last
// output and gradients, as PyTorch's) run these NCHW kernels on an NCHW copy of the input, the result
// copied into the NHWC output once, but for 1x1 ones, one GEMM on the NHWC memory (Note [Channels-last
// pointwise convolution]), and float32 forward ones the channel-vectorized direct kernel suits (64 and
// more output channels per group), which reads NHWC pixels and writes NHWC rows (direct_nhwc).
//
// Threads: with at least as many images as threads, images are split across
// threads, each calling a single-threaded GEMM on its own columns buffer (and,
// for the weight gradient, accumulating into its own copy of dW, summed at the
// end: one copy per thread, not per image); with fewer images the GEMM itself
// runs on every thread.
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "conv_bf16.h"
#include "conv_direct.h"
#include "conv_direct_avx2.h"
#include "conv_kernels.h"
#include "conv_utils.h"
#include "cpu/write_out.h"
#include "flambeau/error.h"
#include "flambeau/memory_format.h"
#include "flambeau/ops.h"
#include "flambeau/parallel.h"
#include "cpu/linalg/gemm.h"
#include "cpu/linalg/lowp_gemm.h"
#include "cpu/low_precision.h"
#include "cpu/ordered_partials.h"
#include "settings.h"
#include "cpu/elementwise/vec_table.h"

namespace flambeau::cpu {
FB_DEFINE_DISPATCH(conv_loops_stub);
FB_REGISTER_NO_DISPATCH(conv_loops_stub, avx512);
FB_DEFINE_DISPATCH(conv_direct_stub);
FB_REGISTER_NO_DISPATCH(conv_direct_stub, base);
FB_REGISTER_NO_DISPATCH(conv_direct_stub, avx2);
FB_DEFINE_DISPATCH(conv_direct_avx2_stub);
FB_REGISTER_NO_DISPATCH(conv_direct_avx2_stub, base);
FB_REGISTER_NO_DISPATCH(conv_direct_avx2_stub, avx512);
const ConvDirectAvx2Kernels* direct_avx2_kernels() {
  if (conv_direct_stub.get()) return nullptr;
  const auto kernels = conv_direct_avx2_stub.get();
  return kernels ? &kernels() : nullptr;
}
FB_DEFINE_DISPATCH(conv_bf16_stub);
FB_REGISTER_NO_DISPATCH(conv_bf16_stub, base);
FB_REGISTER_NO_DISPATCH(conv_bf16_stub, avx2);
}  // namespace flambeau::cpu

namespace flambeau {
namespace {

using cpu::ConvGeo;

/// The loops of the active instruction set (Note [CPU capabilities] in dispatch_stub.h).
template <class T>
const cpu::ConvLoopsOf<T>& loops() {
  const cpu::ConvLoops& t = cpu::conv_loops_stub.get()();
  if constexpr (std::is_same_v<T, float>)
    return t.f32;
  else
    return t.f64;
}
/// The AVX-512 direct kernels (Note [Direct convolution]); nullptr below AVX-512.
const cpu::ConvDirectKernels* direct() {
  const auto kernels = cpu::conv_direct_stub.get();
  return kernels ? &kernels() : nullptr;
}

template <class T>
void k_im2col(const ConvGeo& g, int64_t C, const T* img, T* cols, int64_t ld) {
  loops<T>().im2col(g, C, img, cols, ld);
}
template <class T>
void k_col2im_add(const ConvGeo& g, int64_t C, const T* cols, T* img, int64_t ld) {
  loops<T>().col2im_add(g, C, cols, img, ld);
}
template <class T>
void k_gather(const ConvGeo& g, const T* big, const T* w, const T* b, T* small, int64_t begin, int64_t end) {
  loops<T>().direct_gather(g, big, w, b, small, begin, end);
}
template <class T>
void k_scatter(const ConvGeo& g, const T* small, const T* w, const T* b, T* big, int64_t begin, int64_t end) {
  loops<T>().direct_scatter(g, small, w, b, big, begin, end);
}
template <class T>
void k_weight_grad(const ConvGeo& g, const T* small, const T* big, T* dw, int64_t begin, int64_t end) {
  loops<T>().direct_weight_grad(g, small, big, dw, begin, end);
}

/// A per-thread scratch buffer reused across calls (no page faults per call).
template <class T, int Slot = 0>
T* scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

/// Runs f(begin, end) over images: split across threads (each with a serial
/// BLAS) when there are enough images, else on this thread (BLAS threaded).
template <class F>
void over_images(int64_t N, const F& f) {
  const bool split = get_num_threads() > 1 && N >= get_num_threads() && !in_parallel_region();
  const cpu::SerialBlasScope serial(split);
  if (split) {
    parallel_for(0, N, 1, f);
  } else {
    f(0, N);
  }
}

int to_int(int64_t v, const char* op) {
  FB_CHECK_VALUE(v <= INT_MAX, "[", op, "] a matrix dimension of ", v, " is above 2^31, not supported");
  return static_cast<int>(v);
}

/// The geometry of a convolution (input, weight as given) and its output shape.
ConvGeo make_geo(const Tensor& input, IntArrayRef wsizes, IntArrayRef out, IntArrayRef stride,
                 IntArrayRef padding, IntArrayRef dilation, bool transposed, int64_t groups) {
  ConvGeo g;
  const bool two = input.dim() == 4;
  IntArrayRef big = transposed ? out : input.sizes();
  IntArrayRef small = transposed ? input.sizes() : out;
  g.N = input.sizes()[0];
  g.Cb = big[1];
  g.Cs = small[1];
  g.groups = groups;
  if (two) {
    g.Hb = big[2], g.Wb = big[3], g.Hs = small[2], g.Ws = small[3];
    g.kh = wsizes[2], g.kw = wsizes[3];
    g.sh = stride[0], g.sw = stride[1], g.ph = padding[0], g.pw = padding[1], g.dh = dilation[0],
    g.dw = dilation[1];
  } else {
    g.Wb = big[2], g.Ws = small[2], g.kw = wsizes[2], g.sw = stride[0], g.pw = padding[0], g.dw = dilation[0];
  }
  return g;
}

/// Whether the groups have one big-side channel each (the direct kernels).
bool direct_path(const ConvGeo& g) { return g.Cb == g.groups && !g.pointwise(); }

/// Images per GEMM: enough that a GEMM has about kBlockCols columns (small
/// images would otherwise give small GEMMs, dominated by OpenBLAS's packing).
constexpr int64_t kBlockCols = 1024;
int64_t images_per_gemm(int64_t L) { return std::max<int64_t>(1, kBlockCols / std::max<int64_t>(1, L)); }

/// dst (rows, b * L) <- the rows of b images (rows apart by `image_stride`) side by side.
template <class T>
void gather_images(const T* src, int64_t image_stride, int64_t b, int64_t rows, int64_t L, T* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < b; ++i)
      std::memcpy(dst + r * b * L + i * L, src + i * image_stride + r * L,
                  static_cast<size_t>(L) * sizeof(T));
}

template <class T>
void conv_forward(const ConvGeo& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t G = g.groups, Cb_g = g.Cb / G, Cs_g = g.Cs / G;
  const int64_t L = g.small_hw(), K = Cb_g * g.kk(), HW = g.big_hw();
  if (direct_path(g)) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, L * g.kk()));
    parallel_for(0, g.N * g.Cs, grain, [&](int64_t b, int64_t e) { k_gather(g, x, w, bias, y, b, e); });
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    // Note [Direct convolution] (conv_direct_avx512.cpp): no im2col.
    if (!g.pointwise() && direct() && direct()->direct_conv_suits(g)) {
      direct()->direct_conv(g, x, w, bias, y);
      return;
    }
    // Note [AVX2 direct convolution] (conv_direct_avx2.cpp): no im2col either.
    if (const cpu::ConvDirectAvx2Kernels* avx2 = cpu::direct_avx2_kernels(); avx2 && avx2->suits(g)) {
      avx2->forward(g, x, w, bias, y, nullptr, false);
      return;
    }
  }
  const int64_t nb = std::min(images_per_gemm(L), g.N);
  const int Mi = to_int(Cs_g, "convolution"), Ki = to_int(K, "convolution");
  to_int(nb * L, "convolution");
  over_images(g.N, [&](int64_t begin, int64_t end) {
    T* cols = scratch<T, 0>(static_cast<size_t>(K * nb * L));
    T* tmp = nb > 1 ? scratch<T, 1>(static_cast<size_t>(Cs_g * nb * L)) : nullptr;
    for (int64_t n0 = begin; n0 < end; n0 += nb) {
      const int64_t b = std::min(nb, end - n0), LD = b * L;
      for (int64_t gi = 0; gi < G; ++gi) {
        const T* img = x + (n0 * g.Cb + gi * Cb_g) * HW;
        const T* B = img;
        if (b > 1 || !g.pointwise()) {
          for (int64_t i = 0; i < b; ++i) k_im2col(g, Cb_g, img + i * g.Cb * HW, cols + i * L, LD);
          B = cols;
        }
        T* out0 = y + (n0 * g.Cs + gi * Cs_g) * L;
        if (b == 1) {
          if (bias)
            for (int64_t c = 0; c < Cs_g; ++c)
              std::fill(out0 + c * L, out0 + (c + 1) * L, bias[gi * Cs_g + c]);
          cpu::gemm(false, false, Mi, static_cast<int>(L), Ki, w + gi * Cs_g * K, Ki, B, static_cast<int>(L),
                    out0, static_cast<int>(L), T(1), bias ? T(1) : T(0));
          continue;
        }
        cpu::gemm(false, false, Mi, static_cast<int>(LD), Ki, w + gi * Cs_g * K, Ki, B, static_cast<int>(LD),
                  tmp, static_cast<int>(LD));
        for (int64_t i = 0; i < b; ++i)
          for (int64_t c = 0; c < Cs_g; ++c) {
            const T* src = tmp + c * LD + i * L;
            T* dst = out0 + i * g.Cs * L + c * L;
            const T bv = bias ? bias[gi * Cs_g + c] : T(0);
#pragma omp simd
            for (int64_t l = 0; l < L; ++l) dst[l] = src[l] + bv;
          }
      }
    }
  });
}

/// backends.cpu.conv_transposed_kernel = 'gemm' (Note [Settings]) keeps
/// transposed convolutions on GEMM + col2im.
bool transposed_gemm_forced() {
  return settings::conv_transposed_kernel() == settings::TransposedKernel::Gemm;
}

/// Note [Stride-1 transposed convolution]
/// A transposed convolution of stride 1 (the input gradient of a stride-1
/// convolution) is a plain convolution of the small image with the kernel
/// flipped and its channel dims swapped, padded by dilation * (k - 1) - padding:
/// big[cb, y, x] = sum over cs, i, j of small[cs, y + p - i*d, x + p - j*d] * w[cs, cb, i, j],
/// i.e. taps (k-1-i) of a convolution with padding d*(k-1) - p. On AVX-512 the
/// direct kernel (Note [Direct convolution]) then runs it with no GEMM, no
/// col2im and no columns buffer. stride1_as_conv gives that convolution's geometry f when it applies and
/// the direct kernel (its NCHW or, nhwc, its NHWC form) suits it.
/// stride1_geometry gives f where the rewrite applies and a direct kernel would gain (either ISA).
bool stride1_geometry(const ConvGeo& g, ConvGeo& f) {
  if (g.sh != 1 || g.sw != 1 || g.pointwise() || transposed_gemm_forced()) return false;
  f.N = g.N, f.Cb = g.Cs, f.Hb = g.Hs, f.Wb = g.Ws, f.Cs = g.Cb, f.Hs = g.Hb, f.Ws = g.Wb;
  f.kh = g.kh, f.kw = g.kw, f.dh = g.dh, f.dw = g.dw, f.groups = g.groups;
  f.ph = g.dh * (g.kh - 1) - g.ph, f.pw = g.dw * (g.kw - 1) - g.pw;
  if (f.ph < 0 || f.pw < 0) return false;
  // Mostly padding (LeNet-5's 5x5 conv2 on 10x10 gradients: padded by 4), the direct kernel
  // multiplies mostly zeros: GEMM + col2im wins (measured: 0.83 vs 1.03 ms CPU time).
  if (f.Hb * f.Wb * 2 < (f.Hb + 2 * f.ph) * (f.Wb + 2 * f.pw)) return false;
  // An output_padding makes the big image larger than the plain convolution's output.
  return f.Hb + 2 * f.ph - g.dh * (g.kh - 1) == f.Hs && f.Wb + 2 * f.pw - g.dw * (g.kw - 1) == f.Ws;
}
bool stride1_as_conv(const ConvGeo& g, bool nhwc, ConvGeo& f) {
  if (!direct() || !stride1_geometry(g, f)) return false;
  return nhwc ? direct()->direct_conv_nhwc_suits(f) : direct()->direct_conv_suits(f);
}

/// The weight of the transposed convolution g as that of the plain one (Note [Stride-1 transposed
/// convolution]): each kernel flipped, its channel dims swapped.
std::vector<float> flipped_weight(const ConvGeo& g, const float* w) {
  const int64_t G = g.groups, Cb_g = g.Cb / G, Cs_g = g.Cs / G, kk = g.kk();
  std::vector<float> wf(static_cast<size_t>(g.Cb * Cs_g * kk));
  for (int64_t gi = 0; gi < G; ++gi)
    for (int64_t cs = 0; cs < Cs_g; ++cs)
      for (int64_t cb = 0; cb < Cb_g; ++cb) {
        const float* src = w + ((gi * Cs_g + cs) * Cb_g + cb) * kk;
        float* dst = wf.data() + ((gi * Cb_g + cb) * Cs_g + cs) * kk;
        for (int64_t t = 0; t < kk; ++t) dst[t] = src[kk - 1 - t];
      }
  return wf;
}

/// Runs the transposed convolution g as the plain one f (stride1_as_conv) on the AVX-512 kernels.
void run_stride1_transposed(const ConvGeo& g, const ConvGeo& f, const float* x, const float* w,
                            const float* bias, float* y, bool nhwc) {
  const std::vector<float> wf = flipped_weight(g, w);
  if (nhwc)
    direct()->direct_conv_nhwc(f, x, wf.data(), bias, y);
  else
    direct()->direct_conv(f, x, wf.data(), bias, y);
}

/// Note [Stride-1 transposed convolution] on NCHW memory; false (nothing done) outside that case.
/// On AVX2 CPUs the plain convolution runs on the AVX2 direct kernel (Note [AVX2 direct convolution])
/// where it suits f.
bool transposed_direct(const ConvGeo& g, const float* x, const float* w, const float* bias, float* y) {
  ConvGeo f;
  if (stride1_as_conv(g, false, f)) {
    run_stride1_transposed(g, f, x, w, bias, y, false);
    return true;
  }
  const cpu::ConvDirectAvx2Kernels* avx2 = cpu::direct_avx2_kernels();
  if (!avx2 || !stride1_geometry(g, f) || !avx2->suits(f)) return false;
  avx2->forward(f, x, flipped_weight(g, w).data(), bias, y, nullptr, false);
  return true;
}

template <class T>
void conv_transposed(const ConvGeo& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t G = g.groups, Cb_g = g.Cb / G, Cs_g = g.Cs / G;
  const int64_t L = g.small_hw(), K = Cb_g * g.kk(), HW = g.big_hw();
  if (direct_path(g)) {
    const int64_t grain =
        std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, L * g.kk() * std::max<int64_t>(1, Cs_g)));
    parallel_for(0, g.N * g.Cb, grain, [&](int64_t b, int64_t e) { k_scatter(g, x, w, bias, y, b, e); });
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (transposed_direct(g, x, w, bias, y)) return;
    // Note [Strided transposed convolution] (conv_transposed_avx512.cpp).
    if (direct() && (g.sh > 1 || g.sw > 1) && !transposed_gemm_forced() &&
        direct()->direct_transposed_suits(g)) {
      direct()->direct_transposed(g, x, w, bias, y);
      return;
    }
  }
  const int64_t nb = std::min(images_per_gemm(L), g.N);
  const int Ki = to_int(K, "convolution"), Si = to_int(Cs_g, "convolution");
  to_int(nb * L, "convolution");
  over_images(g.N, [&](int64_t begin, int64_t end) {
    T* cols = scratch<T, 0>(static_cast<size_t>(K * nb * L));
    T* tmp = nb > 1 ? scratch<T, 1>(static_cast<size_t>(Cs_g * nb * L)) : nullptr;
    for (int64_t n0 = begin; n0 < end; n0 += nb) {
      const int64_t b = std::min(nb, end - n0), LD = b * L;
      for (int64_t gi = 0; gi < G; ++gi) {
        const T* X = x + (n0 * g.Cs + gi * Cs_g) * L;
        const T* Wg = w + gi * Cs_g * K;
        T* Y0 = y + (n0 * g.Cb + gi * Cb_g) * HW;
        for (int64_t i = 0; i < b; ++i) {
          T* Y = Y0 + i * g.Cb * HW;
          for (int64_t c = 0; c < Cb_g; ++c)
            std::fill(Y + c * HW, Y + (c + 1) * HW, bias ? bias[gi * Cb_g + c] : T(0));
        }
        if (b == 1 && g.pointwise()) {
          cpu::gemm(true, false, Ki, static_cast<int>(L), Si, Wg, Ki, X, static_cast<int>(L), Y0,
                    static_cast<int>(L), T(1), T(1));
          continue;
        }
        if (b > 1) {
          gather_images(X, g.Cs * L, b, Cs_g, L, tmp);
          X = tmp;
        }
        cpu::gemm(true, false, Ki, static_cast<int>(LD), Si, Wg, Ki, X, static_cast<int>(LD), cols,
                  static_cast<int>(LD));
        for (int64_t i = 0; i < b; ++i) k_col2im_add(g, Cb_g, cols + i * L, Y0 + i * g.Cb * HW, LD);
      }
    }
  });
}

// dW (Cs, Cb_g * kk) = sum over images of small @ im2col(big)^T, per group,
// several images per GEMM (their columns side by side).
template <class T>
void conv_weight_grad(const ConvGeo& g, const T* small, const T* big, T* dw) {
  const int64_t G = g.groups, Cb_g = g.Cb / G, Cs_g = g.Cs / G;
  const int64_t L = g.small_hw(), K = Cb_g * g.kk(), HW = g.big_hw();
  const int64_t wsize = g.Cs * K;
  if (direct_path(g)) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, g.N * L * g.kk()));
    parallel_for(0, g.Cs, grain, [&](int64_t b, int64_t e) { k_weight_grad(g, small, big, dw, b, e); });
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    // Note [Direct weight gradient] (conv_wgrad_avx512.cpp): no im2col, no GEMM.
    if (direct() && direct()->direct_weight_grad_suits(g)) {
      direct()->direct_weight_grad(g, big, small, dw);
      return;
    }
  }
  const int64_t nb = std::min(images_per_gemm(L), g.N);
  const int Mi = to_int(Cs_g, "convolution_backward_weight"), Ni = to_int(K, "convolution_backward_weight");
  to_int(nb * L, "convolution_backward_weight");
  // As over_images splits, but each slice of images sums into its own dW (Note [Partial sums in slice
  // order]); one slice (the whole range) writes dw directly.
  const bool split = get_num_threads() > 1 && g.N >= get_num_threads() && !in_parallel_region();
  const cpu::SerialBlasScope serial(split);
  cpu::sum_in_slice_order(g.N, split ? 1 : g.N, wsize, dw, false, [&](int64_t begin, int64_t end, T* acc) {
    T* cols = scratch<T, 0>(static_cast<size_t>(K * nb * L));
    T* tmp = nb > 1 ? scratch<T, 1>(static_cast<size_t>(Cs_g * nb * L)) : nullptr;
    for (int64_t n0 = begin; n0 < end; n0 += nb) {
      const int64_t b = std::min(nb, end - n0), LD = b * L;
      for (int64_t gi = 0; gi < G; ++gi) {
        const T* S = small + (n0 * g.Cs + gi * Cs_g) * L;
        const T* img = big + (n0 * g.Cb + gi * Cb_g) * HW;
        const T* B = img;
        if (b > 1 || !g.pointwise()) {
          for (int64_t i = 0; i < b; ++i) k_im2col(g, Cb_g, img + i * g.Cb * HW, cols + i * L, LD);
          B = cols;
        }
        if (b > 1) {
          gather_images(S, g.Cs * L, b, Cs_g, L, tmp);
          S = tmp;
        }
        cpu::gemm(false, true, Mi, Ni, static_cast<int>(LD), S, static_cast<int>(LD), B, static_cast<int>(LD),
                  acc + gi * Cs_g * K, Ni, T(1), n0 == begin ? T(0) : T(1));
      }
    }
  });
}

// bfloat16 and float16 (autocast's convolutions) run in float32 on copies and are rounded back once, as a
// GEMM with float32 accumulation would (Note [Low-precision kernels]); bfloat16 on a CPU with
// AVX512-BF16 runs the kernels of Note [bfloat16 convolution] (conv_bf16_avx512.cpp) instead.
using cpu::is_low_precision;

/// The bfloat16 kernels when they run here (the CPU has AVX512-BF16, the capability allows AVX-512).
const cpu::ConvBf16Kernels* bf16_kernels(ScalarType t) {
  if (t != ScalarType::BFloat16 || !cpu::bf16_gemm_kernel_available()) return nullptr;
  const auto kernels = cpu::conv_bf16_stub.get();
  return kernels ? &kernels() : nullptr;
}

const uint16_t* bits(const Tensor& t) { return static_cast<const uint16_t*>(t.data_ptr()); }
uint16_t* bits(Tensor& t) { return static_cast<uint16_t*>(t.data_ptr()); }

template <class F>
void float_types(ScalarType t, const F& f) {
  if (t == ScalarType::Float32)
    f(float{});
  else
    f(double{});
}

// Note [Channels-last pointwise convolution]
// A 1x1, stride-1, unpadded, ungrouped convolution of NHWC tensors is one GEMM over the pixels: the
// input is an (N*H*W, C_in) matrix, the output (N*H*W, C_out), and a 1x1 weight's memory is the same
// (C_out, C_in) matrix in either layout:
//   forward:      y (P, Co)  = x (P, Ci) @ W^T (Ci, Co)   (+ bias, the rows' start)
//   transposed:   y (P, Cb)  = x (P, Cs) @ W (Cs, Cb)     (the input gradient of the forward)
//   weight grad:  dW (Cs, Cb) = small^T (Cs, P) @ big (P, Cb)
// with no NCHW copy in or out (MobileNet's pointwise layers in channels-last).
bool nhwc_matrix(const Tensor& t) { return t.dim() == 4 && is_contiguous_in(t, MemoryFormat::ChannelsLast); }

/// Runs the pointwise case of convolution_out_cpu on NHWC memory; false (nothing done) otherwise.
bool pointwise_nhwc(const Tensor& out, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                    const ConvGeo& g, bool transposed) {
  if (!g.pointwise() || g.groups != 1 || input.numel() == 0 || out.is_contiguous() || !nhwc_matrix(out) ||
      !nhwc_matrix(input) || !weight.is_contiguous() || (bias && !bias->is_contiguous()) ||
      cpu::shares_storage(out, std::initializer_list<const Tensor*>{&input, &weight, bias ? &*bias : nullptr}))
    return false;
  const int P = to_int(g.N * g.small_hw(), "convolution"), Cb = to_int(g.Cb, "convolution");
  const int Cs = to_int(g.Cs, "convolution");
  float_types(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* b = bias ? bias->data<T>() : nullptr;
    if (transposed)
      cpu::gemm(false, false, P, Cb, Cs, input.data<T>(), Cs, weight.data<T>(), Cb, out.data<T>(), Cb, T(1),
                b ? T(1) : T(0), b);
    else
      cpu::gemm(false, true, P, Cs, Cb, input.data<T>(), Cb, weight.data<T>(), Cb, out.data<T>(), Cs, T(1),
                b ? T(1) : T(0), b);
  });
  return true;
}

/// A float32 convolution with an NHWC output that the channel-vectorized direct kernel suits (Note
/// [Direct convolution]), forward or stride-1 transposed (Note [Stride-1 transposed convolution]: the
/// input gradient), runs on NHWC memory: the input read as NHWC (copied to it first if it is not), the
/// output written in place. False (nothing done) otherwise.
bool direct_nhwc(const Tensor& out, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                 const ConvGeo& g, bool transposed) {
  if (input.dtype() != ScalarType::Float32 || g.pointwise() || direct_path(g) || input.numel() == 0 ||
      out.is_contiguous() || !nhwc_matrix(out) || !direct() ||
      cpu::shares_storage(out, std::initializer_list<const Tensor*>{&input, &weight, bias ? &*bias : nullptr}))
    return false;
  ConvGeo f;  // a stride-1 transposed convolution (the input gradient) as a plain one
  if (transposed ? !stride1_as_conv(g, true, f) : !direct()->direct_conv_nhwc_suits(g)) return false;
  const Tensor x = op::contiguous(input, MemoryFormat::ChannelsLast), w = contiguous(weight);
  const std::optional<Tensor> b = bias ? std::optional<Tensor>(contiguous(*bias)) : std::nullopt;
  const float* bp = b ? b->data<float>() : nullptr;
  if (transposed)
    run_stride1_transposed(g, f, x.data<float>(), w.data<float>(), bp, out.data<float>(), true);
  else
    direct()->direct_conv_nhwc(g, x.data<float>(), w.data<float>(), bp, out.data<float>());
  return true;
}

/// The pointwise weight gradient on NHWC memory; false (nothing done) outside that case.
bool pointwise_weight_grad_nhwc(const Tensor& dw, const Tensor& grad, const Tensor& input, const ConvGeo& g,
                                bool transposed) {
  if (!g.pointwise() || g.groups != 1 || !dw.is_contiguous() || !nhwc_matrix(grad) || !nhwc_matrix(input) ||
      (grad.is_contiguous() && input.is_contiguous()) ||
      cpu::shares_storage(dw, std::initializer_list<const Tensor*>{&grad, &input}))
    return false;
  const int P = to_int(g.N * g.small_hw(), "convolution_backward_weight");
  const int Cb = to_int(g.Cb, "convolution_backward_weight"), Cs = to_int(g.Cs, "convolution_backward_weight");
  float_types(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* small = transposed ? input.data<T>() : grad.data<T>();
    const T* big = transposed ? grad.data<T>() : input.data<T>();
    cpu::gemm(true, false, Cs, Cb, P, small, Cs, big, Cb, dw.data<T>(), Cb);
  });
  return true;
}

// convolution and its weight gradient are structured (Note [Structured kernels]): the meta step checked
// the arguments (check_conv, check_conv_weight_grad) and allocated out; the kernels write out itself, or
// a contiguous buffer copied into out when out is strided or shares memory with an argument.
void convolution_out_cpu(const Tensor& out, const Tensor& input_, const Tensor& weight_,
                         const std::optional<Tensor>& bias_, IntArrayRef stride, IntArrayRef padding,
                         IntArrayRef dilation, bool transposed, IntArrayRef output_padding, int64_t groups) {
  if (out.numel() == 0) return;
  const IntArrayRef out_shape = out.sizes();
  const std::initializer_list<const Tensor*> args = {&input_, &weight_, bias_ ? &*bias_ : nullptr};
  const cpu::ConvBf16Kernels* bf16 = bf16_kernels(input_.dtype());
  if (bf16 && input_.numel() > 0) {
    const Tensor input = contiguous(input_), weight = contiguous(weight_);
    const std::optional<Tensor> bias = bias_ ? std::optional<Tensor>(contiguous(*bias_)) : std::nullopt;
    const ConvGeo g =
        make_geo(input, weight.sizes(), out_shape, stride, padding, dilation, transposed, groups);
    const uint16_t* b = bias ? bits(*bias) : nullptr;
    cpu::write_contiguous(out, args, [&](Tensor y) {
      if (transposed)
        bf16->transposed(g, bits(input), bits(weight), b, bits(y));
      else
        bf16->forward(g, bits(input), bits(weight), b, bits(y));
    });
    return;
  }
  if (is_low_precision(input_.dtype())) {
    const std::optional<Tensor> bias32 = bias_ ? std::optional<Tensor>(op::cast(*bias_, ScalarType::Float32)) : std::nullopt;
    const Tensor y32 = op::empty(out_shape, ScalarType::Float32, out.device());
    convolution_out_cpu(y32, op::cast(input_, ScalarType::Float32), op::cast(weight_, ScalarType::Float32),
                        bias32, stride, padding, dilation, transposed, output_padding, groups);
    cpu::copy_out(out, op::cast(y32, input_.dtype()));
    return;
  }
  const ConvGeo geo =
      make_geo(input_, weight_.sizes(), out_shape, stride, padding, dilation, transposed, groups);
  if (pointwise_nhwc(out, input_, weight_, bias_, geo, transposed) ||
      direct_nhwc(out, input_, weight_, bias_, geo, transposed))
    return;
  const Tensor input = contiguous(input_), weight = contiguous(weight_);
  const std::optional<Tensor> bias = bias_ ? std::optional<Tensor>(contiguous(*bias_)) : std::nullopt;
  const ConvGeo g = make_geo(input, weight.sizes(), out_shape, stride, padding, dilation, transposed, groups);
  cpu::write_contiguous(out, args, [&](Tensor y) {
    if (input.numel() == 0) {  // no input values (zero channels or an empty image): the output is the bias
      op::fill_(y, 0);
      if (bias) {
        Shape bs(static_cast<size_t>(y.dim()), 1);
        bs[1] = out_shape[1];
        op::add_(y, op::view(*bias, bs), 1);
      }
      return;
    }
    float_types(input.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* b = bias ? bias->data<T>() : nullptr;
      if (transposed)
        conv_transposed(g, input.data<T>(), weight.data<T>(), b, y.data<T>());
      else
        conv_forward(g, input.data<T>(), weight.data<T>(), b, y.data<T>());
    });
  });
}

void convolution_backward_weight_out_cpu(const Tensor& dw, const Tensor& grad_output_, const Tensor& input_,
                                         IntArrayRef weight_size, IntArrayRef stride, IntArrayRef padding,
                                         IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                                         int64_t groups) {
  // grad_output has the forward's output shape (check_conv_weight_grad).
  if (dw.numel() == 0) return;
  const std::initializer_list<const Tensor*> args = {&grad_output_, &input_};
  if (grad_output_.numel() == 0 || input_.numel() == 0) {
    Tensor dst = dw;
    op::fill_(dst, 0);
    return;
  }
  const cpu::ConvBf16Kernels* bf16 = bf16_kernels(input_.dtype());
  if (bf16 && grad_output_.dtype() == input_.dtype()) {
    const Tensor grad = contiguous(grad_output_), input = contiguous(input_);
    const Shape out_shape(grad.sizes().begin(), grad.sizes().end());
    const ConvGeo g = make_geo(input, weight_size, out_shape, stride, padding, dilation, transposed, groups);
    cpu::write_contiguous(dw, args, [&](Tensor y) {
      bf16->weight_grad(g, transposed ? bits(input) : bits(grad), transposed ? bits(grad) : bits(input),
                        bits(y));
    });
    return;
  }
  if (is_low_precision(input_.dtype())) {
    const Tensor dw32 = op::empty(weight_size, ScalarType::Float32, dw.device());
    convolution_backward_weight_out_cpu(dw32, op::cast(grad_output_, ScalarType::Float32),
                                        op::cast(input_, ScalarType::Float32), weight_size, stride, padding,
                                        dilation, transposed, output_padding, groups);
    cpu::copy_out(dw, op::cast(dw32, input_.dtype()));
    return;
  }
  (void)output_padding;
  const Shape out_shape(grad_output_.sizes().begin(), grad_output_.sizes().end());
  if (pointwise_weight_grad_nhwc(
          dw, grad_output_, input_,
          make_geo(input_, weight_size, out_shape, stride, padding, dilation, transposed, groups), transposed))
    return;
  const Tensor grad = contiguous(grad_output_), input = contiguous(input_);
  const ConvGeo g = make_geo(input, weight_size, out_shape, stride, padding, dilation, transposed, groups);
  cpu::write_contiguous(dw, args, [&](Tensor y) {
    float_types(input.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* small = transposed ? input.data<T>() : grad.data<T>();
      const T* big = transposed ? grad.data<T>() : input.data<T>();
      conv_weight_grad(g, small, big, y.data<T>());
    });
  });
}

// ---- im2col / col2im (F.unfold / F.fold) ----
// Out kernels (Note [Structured kernels]): the meta step (meta::im2col, meta::col2im in
// src/meta/spatial_rules.cpp) checked the arguments and gave out its shape; the geometry is read again
// here from the checked arguments (conv::block_args, no allocation).

ConvGeo block_geo(const conv::BlockArgs& a, int64_t N, int64_t C, int64_t H, int64_t W, int64_t rows,
                  int64_t Hs, int64_t Ws) {
  ConvGeo g;
  g.N = N, g.Cb = C, g.Hb = H, g.Wb = W, g.Cs = rows, g.Hs = Hs, g.Ws = Ws;
  g.kh = a.kh, g.kw = a.kw, g.sh = a.sh, g.sw = a.sw, g.ph = a.ph, g.pw = a.pw, g.dh = a.dh, g.dw = a.dw;
  return g;
}

void im2col_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation,
                    IntArrayRef padding, IntArrayRef stride) {
  if (out.numel() == 0) return;
  if (cpu::is_low_precision(self.dtype()))  // copies: exact through float32
    return cpu::copy_out(out, op::im2col(cpu::to_float32(self), kernel_size, dilation, padding, stride));
  const char* op = "im2col";
  const conv::BlockArgs a = conv::block_args(op, kernel_size, dilation, padding, stride);
  const bool batched = self.dim() == 4;
  const int64_t N = batched ? self.sizes()[0] : 1, C = self.sizes()[batched ? 1 : 0];
  const int64_t H = self.sizes()[self.dim() - 2], W = self.sizes()[self.dim() - 1];
  const auto [Hs, Ws] = conv::block_counts(op, a, H, W);
  const int64_t L = Hs * Ws;
  const Tensor x = contiguous(self);
  const ConvGeo g = block_geo(a, N, C, H, W, C * a.kk, Hs, Ws);
  cpu::write_contiguous(out, self, [&](Tensor y) {
    float_types(self.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = x.data<T>();
      T* dst = y.data<T>();
      const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, a.kk * L));
      // One (image, channel) at a time: C*N independent pieces.
      parallel_for(0, N * C, grain, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) k_im2col(g, 1, src + p * H * W, dst + p * a.kk * L, L);
      });
    });
  });
}

void col2im_out_cpu(const Tensor& out, const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size,
                    IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  if (out.numel() == 0) return;
  if (cpu::is_low_precision(self.dtype()))  // overlapping blocks added in float32, rounded once
    return cpu::copy_out(
        out, op::col2im(cpu::to_float32(self), output_size, kernel_size, dilation, padding, stride));
  const char* op = "col2im";
  const std::array<int64_t, 2> osz = conv::expand_pair(output_size, op, "output_size");
  const conv::BlockArgs a = conv::block_args(op, kernel_size, dilation, padding, stride);
  const bool batched = self.dim() == 3;
  const int64_t N = batched ? self.sizes()[0] : 1;
  const int64_t rows = self.sizes()[batched ? 1 : 0], L = self.sizes()[batched ? 2 : 1];
  const int64_t kk = a.kk, C = rows / kk;
  const auto [Hs, Ws] = conv::block_counts(op, a, osz[0], osz[1]);
  const Tensor x = contiguous(self);
  const ConvGeo g = block_geo(a, N, C, osz[0], osz[1], rows, Hs, Ws);
  cpu::write_contiguous(out, self, [&](Tensor y) {
    float_types(self.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = x.data<T>();
      T* dst = y.data<T>();
      std::memset(dst, 0, static_cast<size_t>(y.numel()) * sizeof(T));  // the overlapping blocks add up
      const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, kk * L));
      parallel_for(0, N * C, grain, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) k_col2im_add(g, 1, src + p * kk * L, dst + p * g.Hb * g.Wb, L);
      });
    });
  });
}

FB_REGISTER_OUT_KERNEL(op::convolution, CPU, convolution_out_cpu);
FB_REGISTER_OUT_KERNEL(op::convolution_backward_weight, CPU, convolution_backward_weight_out_cpu);
FB_REGISTER_OUT_KERNEL(op::im2col, CPU, im2col_out_cpu);
FB_REGISTER_OUT_KERNEL(op::col2im, CPU, col2im_out_cpu);

}  // namespace
}  // namespace flambeau
