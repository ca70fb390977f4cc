#pragma once
// Note [CUDA convolution]
// The index math of flambeau-cuda's convolution and pooling kernels, written
// __host__ __device__ (Note [CUDA index math]) so that tests/cpp checks it
// against core's CPU kernels without a GPU. Geometry as core's Note
// [Convolution geometry]: every convolution is a 2-D one (a 1-D one has a
// height of 1); the "big" image is the one a window slides over (the input of
// a convolution, the output of a transposed one), the "small" image has one
// value per window position.
//   * im2col: columns (C * kh * kw, ld) of a big image (C, Hb, Wb); column
//     l < Hs * Ws is window position (l / Ws, l % Ws); row (c, i, j) holds
//     big[c, oh * sh - ph + i * dh, ow * sw - pw + j * dw] or 0 in the padding.
//   * col2im: the adjoint, as a gather (one thread per big element sums the
//     column entries that read it: no atomics, deterministic).
//   * pooling (max_pool2d, avg_pool2d, adaptive_avg_pool2d): planes (Hb, Wb)
//     -> (Hs, Ws), one thread per output element forward; backward one
//     thread per input element gathers from the windows that hold it
//     (max_pool's backward scatters through its indices instead).
// Only standard headers: the .cu files include it without core's headers.
#include <cstdint>
#include <limits>

#include "flambeau_cuda/device_math.h"

namespace flambeau::cuda {

struct ConvGeometry {
  int64_t Hb = 1, Wb = 1;  // big image
  int64_t Hs = 1, Ws = 1;  // small image
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;

  FBC_HD int64_t kk() const { return kh * kw; }
  FBC_HD int64_t small_hw() const { return Hs * Ws; }
  FBC_HD int64_t big_hw() const { return Hb * Wb; }

  /// The offset in a big image (C, Hb, Wb) that im2col's row `row` (c * kk +
  /// i * kw + j) reads at window position `l`; -1 in the padding.
  FBC_HD int64_t im2col_source(int64_t row, int64_t l) const {
    const int64_t c = row / kk(), ij = row % kk();
    const int64_t i = ij / kw, j = ij % kw;
    const int64_t oh = l / Ws, ow = l % Ws;
    const int64_t h = oh * sh - ph + i * dh, w = ow * sw - pw + j * dw;
    if (h < 0 || h >= Hb || w < 0 || w >= Wb) return -1;
    return (c * Hb + h) * Wb + w;
  }

  /// col2im as a gather: the sum of the column entries (rows ld apart) that
  /// read big element `index` (c * Hb * Wb + h * Wb + w).
  template <class T>
  FBC_HD T col2im_sum(const T* cols, int64_t ld, int64_t index) const {
    const int64_t c = index / big_hw(), hw = index % big_hw();
    const int64_t h = hw / Wb, w = hw % Wb;
    T acc = T(0);
    for (int64_t i = 0; i < kh; ++i) {
      const int64_t y = h + ph - i * dh;  // = oh * sh
      if (y < 0 || y % sh != 0 || y / sh >= Hs) continue;
      const int64_t oh = y / sh;
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t x = w + pw - j * dw;
        if (x < 0 || x % sw != 0 || x / sw >= Ws) continue;
        acc += cols[((c * kh + i) * kw + j) * ld + oh * Ws + x / sw];
      }
    }
    return acc;
  }
};

// ---- pooling over planes (Hb, Wb) -> (Hs, Ws), as core's src/cpu/pool.cpp ----

/// max_pool2d's window (oh, ow) of one plane (dilated): core's scan, from
/// -infinity, a later element wins when greater or NaN; `*arg` gets the flat
/// index h * Wb + w of the winner (the first valid position if none wins).
template <class T>
FBC_HD T max_pool_window(const ConvGeometry& g, const T* plane, int64_t oh, int64_t ow, int64_t* arg) {
  int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int64_t h1 = h0 + (g.kh - 1) * g.dh + 1, w1 = w0 + (g.kw - 1) * g.dw + 1;
  if (h1 > g.Hb) h1 = g.Hb;
  if (w1 > g.Wb) w1 = g.Wb;
  while (h0 < 0) h0 += g.dh;
  while (w0 < 0) w0 += g.dw;
  T best = -std::numeric_limits<T>::infinity();
  int64_t best_i = h0 * g.Wb + w0;
  for (int64_t h = h0; h < h1; h += g.dh)
    for (int64_t w = w0; w < w1; w += g.dw) {
      const T v = plane[h * g.Wb + w];
      if (v > best || v != v) {
        best = v;
        best_i = h * g.Wb + w;
      }
    }
  *arg = best_i;
  return best;
}

/// avg_pool2d (no dilation): window (oh, ow) spans [oh * sh - ph, + kh) clipped
/// to the padded image for the divisor with padding, to the image for the sum.
struct AvgPoolGeometry {
  ConvGeometry g;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none

  /// The clipped window of (oh, ow) in `r` = {h0, h1, w0, w1} and its divisor
  /// (0 for a window with no input element).
  FBC_HD int64_t window(int64_t oh, int64_t ow, int64_t* r) const {
    int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    int64_t h1 = h0 + g.kh, w1 = w0 + g.kw;
    if (h1 > g.Hb + g.ph) h1 = g.Hb + g.ph;
    if (w1 > g.Wb + g.pw) w1 = g.Wb + g.pw;
    const int64_t padded = (h1 - h0) * (w1 - w0);
    if (h0 < 0) h0 = 0;
    if (w0 < 0) w0 = 0;
    if (h1 > g.Hb) h1 = g.Hb;
    if (w1 > g.Wb) w1 = g.Wb;
    r[0] = h0, r[1] = h1, r[2] = w0, r[3] = w1;
    if (h0 >= h1 || w0 >= w1) return 0;
    if (divisor_override != 0) return divisor_override;
    return count_include_pad ? padded : (h1 - h0) * (w1 - w0);
  }
  /// The mean of window (oh, ow) of one plane (0 for an empty window).
  template <class T>
  FBC_HD T forward(const T* plane, int64_t oh, int64_t ow) const {
    int64_t r[4];
    const int64_t div = window(oh, ow, r);
    if (div == 0) return T(0);
    T acc = T(0);
    for (int64_t h = r[0]; h < r[1]; ++h)
      for (int64_t w = r[2]; w < r[3]; ++w) acc += plane[h * g.Wb + w];
    return acc / static_cast<T>(div);
  }
  /// The gradient of input (h, w) of one plane: grad / divisor of each window holding it.
  template <class T>
  FBC_HD T backward(const T* grad_plane, int64_t h, int64_t w) const {
    // Windows with oh * sh - ph <= h < oh * sh - ph + kh.
    const int64_t a = h + g.ph - g.kh + 1, b = w + g.pw - g.kw + 1;
    const int64_t oh0 = a <= 0 ? 0 : (a + g.sh - 1) / g.sh, ow0 = b <= 0 ? 0 : (b + g.sw - 1) / g.sw;
    int64_t oh1 = (h + g.ph) / g.sh + 1, ow1 = (w + g.pw) / g.sw + 1;
    if (oh1 > g.Hs) oh1 = g.Hs;
    if (ow1 > g.Ws) ow1 = g.Ws;
    T acc = T(0);
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        int64_t r[4];
        const int64_t div = window(oh, ow, r);
        if (div != 0) acc += grad_plane[oh * g.Ws + ow] / static_cast<T>(div);
      }
    return acc;
  }
};

/// [start, end) of adaptive pooling's window o of `out` over `in`: floor(o *
/// in / out), ceil((o + 1) * in / out).
FBC_HD int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
FBC_HD int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

/// adaptive_avg_pool2d's window (oh, ow) of one plane: its mean.
template <class T>
FBC_HD T adaptive_avg_window(const ConvGeometry& g, const T* plane, int64_t oh, int64_t ow) {
  const int64_t h0 = adaptive_start(oh, g.Hb, g.Hs), h1 = adaptive_end(oh, g.Hb, g.Hs);
  const int64_t w0 = adaptive_start(ow, g.Wb, g.Ws), w1 = adaptive_end(ow, g.Wb, g.Ws);
  T acc = T(0);
  for (int64_t h = h0; h < h1; ++h)
    for (int64_t w = w0; w < w1; ++w) acc += plane[h * g.Wb + w];
  return acc / static_cast<T>((h1 - h0) * (w1 - w0));
}

/// adaptive_avg_pool2d's backward at input (h, w): grad / window size of each window holding it.
template <class T>
FBC_HD T adaptive_avg_backward(const ConvGeometry& g, const T* grad_plane, int64_t h, int64_t w) {
  // Windows overlap by at most one element: those holding h start at or after floor(h * Hs / Hb) - 1.
  int64_t oh0 = (h * g.Hs) / g.Hb - 1, ow0 = (w * g.Ws) / g.Wb - 1;
  if (oh0 < 0) oh0 = 0;
  if (ow0 < 0) ow0 = 0;
  T acc = T(0);
  for (int64_t oh = oh0; oh < g.Hs && adaptive_start(oh, g.Hb, g.Hs) <= h; ++oh) {
    const int64_t h0 = adaptive_start(oh, g.Hb, g.Hs), h1 = adaptive_end(oh, g.Hb, g.Hs);
    if (h >= h1) continue;
    for (int64_t ow = ow0; ow < g.Ws && adaptive_start(ow, g.Wb, g.Ws) <= w; ++ow) {
      const int64_t w0 = adaptive_start(ow, g.Wb, g.Ws), w1 = adaptive_end(ow, g.Wb, g.Ws);
      if (w >= w1) continue;
      acc += grad_plane[oh * g.Ws + ow] / static_cast<T>((h1 - h0) * (w1 - w0));
    }
  }
  return acc;
}

}  // namespace flambeau::cuda
